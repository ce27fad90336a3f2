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
#if LS_GEMM_VNNI
#include "cpu/gemm/block_sums_vnni.h"
#else
#include "cpu/gemm/block_sums_avx2.h"
#endif
#include "cpu/gemm/legacy_decode.h"
#include "cpu/gemm/vec256.h"

namespace ls::cpu::gemm {
using namespace ls::qb;

namespace {
// One token (a decode step) on AVX2: the transpose below costs more than it saves when its
// rows meet a single token (24 shuffles and 8 broadcasts per block). Here each row's block is
// multiplied whole against the token's 32 bytes and the 8 rows' partial sums folded by hsum8
// into lane r = row r: the same exact integer block sums, then the same float chain per lane,
// so the results equal the transposed form's bit for bit (tests/cpu: every tile against the
// reference at M = 1). With VNNI the transposed form's dpbusd is already cheap; it stays.
template <class D>
void legacy_tile_one(const uint8_t* const* wr, const uint8_t* a, size_t extra_off, int64_t nb, float* out, int nr,
                     size_t pf) {
    using Block = typename D::Block;
    const __m256i ones = _mm256_set1_epi16(1);
    const auto* yb = reinterpret_cast<const BlockQ8_0*>(a);
    const float* yd = reinterpret_cast<const float*>(a + extra_off);
    [[maybe_unused]] const int32_t* ybias = reinterpret_cast<const int32_t*>(yd + nb);
    __m256 acc = _mm256_setzero_ps();
    for (int64_t i = 0; i < nb; ++i) {
        const __m256i y = loadu(yb[i].qs);
        BlockScales<D, 8> ds;
        __m256i v[8];
        for (int r = 0; r < 8; ++r) {
            const Block& b = reinterpret_cast<const Block*>(wr[r])[i];
            ds.set(r, b);
            const __m256i q = D::dec(b);
            // kOff 0: |x| * (y * sign x), a pair at most 2*128*127; else u <= 31, 2*31*127.
            if constexpr (D::kOff == 0) v[r] = _mm256_madd_epi16(_mm256_maddubs_epi16(_mm256_sign_epi8(q, q), _mm256_sign_epi8(y, q)), ones);
            else v[r] = _mm256_madd_epi16(_mm256_maddubs_epi16(q, y), ones);
        }
        if (pf) prefetch_group(wr[0] + pf, sizeof(Block), i);
        __m256i s = hsum8(v);
        if constexpr (D::kOff != 0) s = _mm256_sub_epi32(s, _mm256_set1_epi32(ybias[i]));
        const __m256 sc = _mm256_mul_ps(ds.get8(), _mm256_set1_ps(yd[i]));
        acc = _mm256_add_ps(acc, _mm256_mul_ps(sc, _mm256_cvtepi32_ps(s)));
    }
    store_out(acc, out, nr);
}

template <class D, int G>
void legacy_tile(const uint8_t* const* wr, const uint8_t* a, size_t astride, size_t extra_off, int64_t nb,
                 float* const* out, int nr, size_t pf) {
    if constexpr (G == 1 && !LS_GEMM_VNNI) return legacy_tile_one<D>(wr, a, extra_off, nb, out[0], nr, pf);
    using Block = typename D::Block;
    __m256 acc[G];
    for (int g = 0; g < G; ++g) acc[g] = _mm256_setzero_ps();
    for (int64_t i = 0; i < nb; ++i) {
        __m256i q[8];
        [[maybe_unused]] __m256i s8[8];
        BlockScales<D, 8> ds;
        for (int r = 0; r < 8; ++r) {
            const Block& b = reinterpret_cast<const Block*>(wr[r])[i];
            ds.set(r, b);
            q[r] = D::dec(b);
        }
        if (pf) prefetch_group(wr[0] + pf, sizeof(Block), i);
        const __m256 dw = ds.get8();
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
            legacy_block_sums<D, S>(q, s8, yq, s);
            for (int g = 0; g < S; ++g) {
                const uint8_t* ag = a + astride * static_cast<size_t>(g0 + g);
                const float* yd = reinterpret_cast<const float*>(ag + extra_off);
                const int32_t* ybias = reinterpret_cast<const int32_t*>(yd + nb);
                // x = u - off: subtract off * (sum of the block's activation quants).
                if constexpr (D::kOff != 0) s[g] = _mm256_sub_epi32(s[g], _mm256_set1_epi32(ybias[i]));
                const __m256 sc = _mm256_mul_ps(dw, _mm256_set1_ps(yd[i]));
                // sum = sum + (d_w * d_a) * isum (core/quant/quant_legacy.cpp): the product
                // rounded, then the sum; no fused multiply-add.
                acc[g0 + g] = _mm256_add_ps(acc[g0 + g], _mm256_mul_ps(sc, _mm256_cvtepi32_ps(s[g])));
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
        case DType::IQ4_NL: return legacy_tile<LIQ4_NL, G>(wr, a, astride, extra_off, k / QK, out, nr, pf);
        case DType::MXFP4: return legacy_tile<LMXFP4, G>(wr, a, astride, extra_off, k / QK, out, nr, pf);
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
