// The 32-element block types in 8-row tiles, AVX2 (maddubs + madd) or VNNI (dpbusd).
// Per block the 8 rows are unpacked once (to unsigned bytes where the type has an offset, so
// _mm256_maddubs_epi16 takes them as they are) and transposed 8x8 in 32-bit units, so vector j
// holds bytes 4j..4j+3 of each row; a token's block is then 8 maddubs with its bytes 4j..4j+3
// broadcast, summed lane-wise: the exact block sums of the 8 rows with no horizontal
// reduction. With VNNI the block sums come from dpbusd (Q8_0 weights offset to unsigned, like
// Q4_0/Q5_0): the same exact integers, so results do not depend on the instruction set.
#include "cpu/gemm/tiles.h"

#if LS_GEMM_AVX2
#include <cstring>

#include "cpu/gemm/act_layout.h"
#include "cpu/gemm/legacy_decode.h"
#include "cpu/gemm/vec256.h"

namespace ls::cpu::gemm {
using namespace ls::qb;

namespace {
template <class D, int G>
void legacy_tile(const uint8_t* const* wr, const uint8_t* a, size_t astride, size_t extra_off, int64_t nb,
                 float* const* out, int nr, size_t pf) {
    using Block = typename D::Block;
    [[maybe_unused]] const __m256i ones = _mm256_set1_epi16(1);
    __m256 acc[G];
    for (int g = 0; g < G; ++g) acc[g] = _mm256_setzero_ps();
    for (int64_t i = 0; i < nb; ++i) {
        __m256i q[8];
        [[maybe_unused]] __m256i s8[8];
        alignas(16) uint16_t dh[8];
        for (int r = 0; r < 8; ++r) {
            const Block& b = reinterpret_cast<const Block*>(wr[r])[i];
            std::memcpy(&dh[r], &b.d, 2);
            q[r] = D::dec(b);
        }
        if (pf) prefetch_group(wr[0] + pf, sizeof(Block), i);
        const __m256 dw = load_d8(dh);
        transpose8x8_i32(q);  // q[j] lane r = bytes 4j..4j+3 of row r
        if constexpr (D::kOff == 0)
            for (int j = 0; j < 8; ++j) {
                s8[j] = q[j];
                q[j] = _mm256_sign_epi8(q[j], q[j]);  // |x| (as unsigned: -128 -> 128)
            }
        // Tokens in sub-groups of up to 4, the block's 8 vectors in the outer loop: 4 token
        // sums + the two weight vectors of step j stay in registers (16 ymm on AVX2).
        constexpr int S = G < 4 ? G : 4;
        for (int g0 = 0; g0 < G; g0 += S) {
            const int8_t* yq[S];
            __m256i s[S];
            for (int g = 0; g < S; ++g) {
                const uint8_t* ag = a + astride * static_cast<size_t>(g0 + g);
                yq[g] = reinterpret_cast<const BlockQ8_0*>(ag)[i].qs;
            }
#if LS_GEMM_VNNI
            // u in [0, 255], y in [-127, 127]: each lane sums 4 products exactly (the offset
            // is taken off below). Fewer than 4 tokens: 2 or 4 chains per token, so that
            // dpbusd's latency overlaps.
            constexpr int C = S == 1 ? 4 : S < 4 ? 2 : 1;
            __m256i c[C][S];
            for (int h = 0; h < C; ++h)
                for (int g = 0; g < S; ++g) c[h][g] = _mm256_setzero_si256();
            for (int j = 0; j < 8; j += C)
                for (int h = 0; h < C; ++h)
                    for (int g = 0; g < S; ++g) c[h][g] = dpbusd(c[h][g], q[j + h], bcast4(yq[g] + 4 * (j + h)));
            for (int g = 0; g < S; ++g) {
                s[g] = c[0][g];
                for (int h = 1; h < C; ++h) s[g] = _mm256_add_epi32(s[g], c[h][g]);
            }
#else
            if constexpr (D::kOff == 0) {
                // Signed: |x| * (y * sign x); a pair reaches 2*128*127, so widen each product.
                for (int g = 0; g < S; ++g) s[g] = _mm256_setzero_si256();
                for (int j = 0; j < 8; ++j)
                    for (int g = 0; g < S; ++g)
                        s[g] = _mm256_add_epi32(s[g], _mm256_madd_epi16(_mm256_maddubs_epi16(q[j], _mm256_sign_epi8(bcast4(yq[g] + 4 * j), s8[j])), ones));
            } else {
                // Rows are lanes: q[j] times 4 activation bytes broadcast. u <= 31, so a maddubs
                // pair is at most 2*31*127 = 7874 in magnitude and four of them fit int16.
                for (int g = 0; g < S; ++g) s[g] = _mm256_setzero_si256();
                for (int k = 0; k < 2; ++k) {
                    __m256i t[S];
                    for (int g = 0; g < S; ++g) t[g] = _mm256_maddubs_epi16(q[4 * k], bcast4(yq[g] + 16 * k));
                    for (int j = 1; j < 4; ++j)
                        for (int g = 0; g < S; ++g)
                            t[g] = _mm256_add_epi16(t[g], _mm256_maddubs_epi16(q[4 * k + j], bcast4(yq[g] + 16 * k + 4 * j)));
                    for (int g = 0; g < S; ++g) s[g] = _mm256_add_epi32(s[g], _mm256_madd_epi16(t[g], ones));
                }
            }
#endif
            for (int g = 0; g < S; ++g) {
                const uint8_t* ag = a + astride * static_cast<size_t>(g0 + g);
                const float* yd = reinterpret_cast<const float*>(ag + extra_off);
                const int32_t* ybias = reinterpret_cast<const int32_t*>(yd + nb);
                // x = u - off: subtract off * (sum of the block's activation quants).
                if constexpr (D::kOff != 0) s[g] = _mm256_sub_epi32(s[g], _mm256_set1_epi32(ybias[i]));
                const __m256 sc = _mm256_mul_ps(dw, _mm256_set1_ps(yd[i]));
                acc[g0 + g] = _mm256_fmadd_ps(sc, _mm256_cvtepi32_ps(s[g]), acc[g0 + g]);
            }
        }
    }
    for (int g = 0; g < G; ++g) store_out(acc[g], out[g], nr);
}
}  // namespace

template <int G>
void legacy_tile8(DType t, const uint8_t* const* wr, const uint8_t* a, size_t astride, int64_t k, float* const* out, int nr,
                  size_t pf) {
    const size_t extra_off = legacy_extra_off(k);
    switch (t) {
        case DType::Q4_0: return legacy_tile<LQ4_0, G>(wr, a, astride, extra_off, k / QK, out, nr, pf);
        case DType::Q5_0: return legacy_tile<LQ5_0, G>(wr, a, astride, extra_off, k / QK, out, nr, pf);
        case DType::Q8_0: return legacy_tile<LQ8_0, G>(wr, a, astride, extra_off, k / QK, out, nr, pf);
        default: break;
    }
}
static_assert(kMaxGroup8 == 32, "instantiate every group size up to kMaxGroup8");

#define LS_INSTANTIATE(G)                                                                                              \
    template void legacy_tile8<G>(DType, const uint8_t* const*, const uint8_t*, size_t, int64_t, float* const*, int, size_t);
LS_GEMM_GROUPS_8(LS_INSTANTIATE)
#undef LS_INSTANTIATE

}  // namespace ls::cpu::gemm
#endif  // LS_GEMM_AVX2
