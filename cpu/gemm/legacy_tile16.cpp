// The 32-element block types with one scale in 16-row tiles of 512-bit vectors (AVX-512 VNNI): half the
// instructions per row and token of the 8-row form, for the prompt (more than 8 tokens).
#include "cpu/gemm/tiles.h"

#if LS_GEMM_V512
#include <cstring>

#include "cpu/gemm/act_layout.h"
#include "cpu/gemm/legacy_decode.h"
#include "cpu/gemm/vec256.h"

namespace ls::cpu::gemm {
using namespace ls::qb;

namespace {
// Each row decoded to unsigned bytes and the two 8-row halves transposed as in the 8-row form
// (legacy_tile8.cpp), then joined, so that vector j lane r = bytes 4j..4j+3 of row r. Per lane
// the same exact integer sum and the same float operations as the 8-row form.
template <class D, int G>
void tile16(const uint8_t* const* wr, const uint8_t* a, size_t astride, size_t extra_off, int64_t nb, float* const* out, int nr, size_t pf) {
    using Block = typename D::Block;
    __m512 acc[G];
    for (int g = 0; g < G; ++g) acc[g] = _mm512_setzero_ps();
    for (int64_t i = 0; i < nb; ++i) {
        __m256i q[16];
        BlockScales<D, 16> ds;
        for (int r = 0; r < 16; ++r) {
            const Block& b = reinterpret_cast<const Block*>(wr[r])[i];
            ds.set(r, b);
            q[r] = D::dec(b);
        }
        if (pf) prefetch_group(wr[0] + pf, sizeof(Block), i, 16);
        const __m512 dw = _mm512_insertf32x8(_mm512_castps256_ps512(ds.get8(0)), ds.get8(8), 1);
        transpose8x8_i32(q);
        transpose8x8_i32(q + 8);
        __m512i z[8];
        for (int j = 0; j < 8; ++j) z[j] = _mm512_inserti64x4(_mm512_castsi256_si512(q[j]), q[8 + j], 1);
        constexpr int S = G < 4 ? G : 4;
        for (int g0 = 0; g0 < G; g0 += S) {
            const int8_t* yq[S];
            for (int g = 0; g < S; ++g) yq[g] = reinterpret_cast<const BlockQ8_0*>(a + astride * static_cast<size_t>(g0 + g))[i].qs;
            constexpr int C = S == 1 ? 4 : S < 4 ? 2 : 1;  // independent chains, as in legacy_tile8.cpp
            __m512i c[C][S];
            for (int h = 0; h < C; ++h)
                for (int g = 0; g < S; ++g) c[h][g] = _mm512_setzero_si512();
            for (int j = 0; j < 8; j += C)
                for (int h = 0; h < C; ++h)
                    for (int g = 0; g < S; ++g) {
                        int32_t y4;
                        std::memcpy(&y4, yq[g] + 4 * (j + h), 4);
                        c[h][g] = _mm512_dpbusd_epi32(c[h][g], z[j + h], _mm512_set1_epi32(y4));
                    }
            for (int g = 0; g < S; ++g) {
                __m512i sg = c[0][g];
                for (int h = 1; h < C; ++h) sg = _mm512_add_epi32(sg, c[h][g]);
                const uint8_t* ag = a + astride * static_cast<size_t>(g0 + g);
                const float* yd = reinterpret_cast<const float*>(ag + extra_off);
                const int32_t* ybias = reinterpret_cast<const int32_t*>(yd + nb);
                sg = _mm512_sub_epi32(sg, _mm512_set1_epi32(ybias[i]));
                const __m512 sc = _mm512_mul_ps(dw, _mm512_set1_ps(yd[i]));
                acc[g0 + g] = _mm512_add_ps(acc[g0 + g], _mm512_mul_ps(sc, _mm512_cvtepi32_ps(sg)));
            }
        }
    }
    const __mmask16 keep = static_cast<__mmask16>((1u << nr) - 1);
    for (int g = 0; g < G; ++g) _mm512_mask_storeu_ps(out[g], keep, acc[g]);
}
}  // namespace

template <int G>
void legacy_tile16(DType t, const uint8_t* const* wr, const uint8_t* a, size_t astride, int64_t k, float* const* out, int nr,
                   size_t pf) {
    const size_t extra_off = legacy_extra_off(k);
    switch (t) {
        case DType::Q4_0: return tile16<LQ4_0, G>(wr, a, astride, extra_off, k / QK, out, nr, pf);
        case DType::Q5_0: return tile16<LQ5_0, G>(wr, a, astride, extra_off, k / QK, out, nr, pf);
        case DType::Q8_0: return tile16<LQ8_0, G>(wr, a, astride, extra_off, k / QK, out, nr, pf);
        case DType::IQ4_NL: return tile16<LIQ4_NL, G>(wr, a, astride, extra_off, k / QK, out, nr, pf);
        case DType::MXFP4: return tile16<LMXFP4, G>(wr, a, astride, extra_off, k / QK, out, nr, pf);
        default: break;
    }
}
static_assert(kMaxGroup16 == 64, "instantiate every group size up to kMaxGroup16");

#define LS_INSTANTIATE(G)                                                                                              \
    template void legacy_tile16<G>(DType, const uint8_t* const*, const uint8_t*, size_t, int64_t, float* const*, int, size_t);
LS_GEMM_GROUPS_16(LS_INSTANTIATE)
#undef LS_INSTANTIATE

}  // namespace ls::cpu::gemm
#endif  // LS_GEMM_V512
