// IQ4_XS / Q8_K in 8-row tiles: per row and super-block the 256 int8 levels (IQ4_NL's, looked
// up by a byte shuffle) kept as |level| and level, and the 8 sub-block scales as int16
// broadcasts; a token's sum is maddubs(|level|, y * sign(level)) (pairs reach 2 * 127 * 127,
// inside int16) widened by madd with the scale: the exact integers of core/quant/quant_lut.cpp,
// then its float chain. With AVX-512 BW the 256 values go in four 512-bit vectors (the sign
// applied by a masked negate): the same exact sums.
#include "cpu/gemm/tiles.h"

#if LS_GEMM_AVX2
#include <cstring>

#include "core/quant/block_access.h"
#include "core/quant/quant_blocks.h"
#include "cpu/avx2_unpack.h"
#include "cpu/gemm/ksum.h"
#include "cpu/gemm/vec256.h"

namespace ls::cpu::gemm {
using namespace ls::qb;

namespace {
template <int G>
void iq4xs_tile(const uint8_t* const* wr, const uint8_t* a, size_t astride, int64_t nb, float* const* out, int nr, size_t pf) {
    alignas(64) uint8_t qa[8][QK_K];  // |level|
    alignas(64) int8_t qs[8][QK_K];   // level
    __m256i scv[8][8];
#if LS_GEMM_K512
    __m512i scz[8][4];
#endif
    __m256 acc[G];
    for (int g = 0; g < G; ++g) acc[g] = _mm256_setzero_ps();
    const __m256i tbl = _mm256_broadcastsi128_si256(
        _mm_set_epi64x(static_cast<long long>(kIQ4NLHi), static_cast<long long>(kIQ4NLLo)));
    for (int64_t i = 0; i < nb; ++i) {
        alignas(16) uint16_t dh[8];
        for (int r = 0; r < 8; ++r) {
            const BlockIQ4_XS& b = reinterpret_cast<const BlockIQ4_XS*>(wr[r])[i];
            std::memcpy(&dh[r], &b.d, 2);
            for (int s = 0; s < 8; ++s) {
                // Sub-block s: 16 bytes of qs, low nibbles then high ones in element order.
                const __m256i lv = _mm256_shuffle_epi8(tbl, nibbles16(b.qs + 16 * s));
                _mm256_store_si256(reinterpret_cast<__m256i*>(qs[r] + 32 * s), lv);
                _mm256_store_si256(reinterpret_cast<__m256i*>(qa[r] + 32 * s), _mm256_abs_epi8(lv));
                scv[r][s] = _mm256_set1_epi16(static_cast<short>(iq4xs_scale(b, s)));
            }
        }
        if (pf) prefetch_group(wr[0] + pf, sizeof(BlockIQ4_XS), i);
        const __m256 dw = load_d8(dh);
#if LS_GEMM_K512
        for (int r = 0; r < 8; ++r) join_scales(scv[r], scz[r]);
#endif
        for (int g = 0; g < G; ++g) {
            const BlockQ8_K& y = reinterpret_cast<const BlockQ8_K*>(a + astride * static_cast<size_t>(g))[i];
            __m256i v[8];
#if LS_GEMM_K512
            __m512i y4[4];
            for (int m = 0; m < 4; ++m) y4[m] = _mm512_loadu_si512(y.qs + 64 * m);
            for (int r = 0; r < 8; ++r) {
                __m512i s = _mm512_setzero_si512();
                for (int m = 0; m < 4; ++m) {
                    const __m512i lv = _mm512_load_si512(qs[r] + 64 * m);
                    const __m512i ys = _mm512_mask_sub_epi8(y4[m], _mm512_movepi8_mask(lv), _mm512_setzero_si512(), y4[m]);
                    const __m512i p = _mm512_maddubs_epi16(_mm512_load_si512(qa[r] + 64 * m), ys);
                    s = _mm512_add_epi32(s, _mm512_madd_epi16(p, scz[r][m]));
                }
                v[r] = _mm256_add_epi32(_mm512_castsi512_si256(s), _mm512_extracti64x4_epi64(s, 1));
            }
#else
            for (int r = 0; r < 8; ++r) {
                __m256i s = _mm256_setzero_si256();
                for (int j = 0; j < 8; ++j) {
                    const __m256i ys = _mm256_sign_epi8(loadu(y.qs + 32 * j), _mm256_load_si256(reinterpret_cast<const __m256i*>(qs[r] + 32 * j)));
                    const __m256i p = _mm256_maddubs_epi16(_mm256_load_si256(reinterpret_cast<const __m256i*>(qa[r] + 32 * j)), ys);
                    s = _mm256_add_epi32(s, _mm256_madd_epi16(p, scv[r][j]));
                }
                v[r] = s;
            }
#endif
            float yd;
            std::memcpy(&yd, &y.d, 4);
            // sum = sum + (d_a * d_w) * isum: the product rounded, then the sum; no fma.
            acc[g] = _mm256_add_ps(acc[g], _mm256_mul_ps(_mm256_mul_ps(dw, _mm256_set1_ps(yd)), _mm256_cvtepi32_ps(hsum8(v))));
        }
    }
    for (int g = 0; g < G; ++g) store_out(acc[g], out[g], nr);
}
}  // namespace

template <int G>
void iq4xs_tile8(const uint8_t* const* wr, const uint8_t* a, size_t astride, int64_t k, float* const* out, int nr, size_t pf) {
    iq4xs_tile<G>(wr, a, astride, k / QK_K, out, nr, pf);
}
static_assert(kMaxGroup8 == 32, "instantiate every group size up to kMaxGroup8");

#define LS_INSTANTIATE(G) \
    template void iq4xs_tile8<G>(const uint8_t* const*, const uint8_t*, size_t, int64_t, float* const*, int, size_t);
LS_GEMM_GROUPS_8(LS_INSTANTIATE)
#undef LS_INSTANTIATE

}  // namespace ls::cpu::gemm
#endif  // LS_GEMM_AVX2
