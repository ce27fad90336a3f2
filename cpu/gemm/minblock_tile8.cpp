// Q4_1 and Q5_1 (a scale and a min per 32-element block) over Q8_1 activations, in 8-row
// tiles. Per block each row is decoded once to 32 unsigned bytes (0..15, or 0..31 with the fifth
// bits), then per token: maddubs with the activation bytes (pair sums below 2 * 31 * 128,
// exact) and madd with ones give each row's 8 exact int32 partial sums, one hadd tree gives
// the 8 rows' block sums. The float part follows core/quant/quant_legacy.cpp per block:
//     sum = sum + (d_w * d_a) * float(isum);  sum = sum + m_w * s_a
// each operation rounded, no fused multiply-add. AVX2 instructions only, so every build (VNNI
// or not) runs the same code.
#include "cpu/gemm/tiles.h"

#if LS_GEMM_AVX2
#include <cstring>
#include <type_traits>

#include "core/quant/quant.h"
#include "core/quant/quant_blocks.h"
#include "cpu/avx2_unpack.h"
#include "cpu/gemm/vec256.h"

namespace ls::cpu::gemm {
using namespace ls::qb;

namespace {

template <int G, class Block>
void minblock_tile(const uint8_t* const* wr, const uint8_t* a, size_t astride, int64_t nb, float* const* out, int nr, size_t pf) {
    constexpr bool kQ5 = std::is_same_v<Block, BlockQ5_1>;
    __m256 acc[G];
    for (int g = 0; g < G; ++g) acc[g] = _mm256_setzero_ps();
    const __m256i ones = _mm256_set1_epi16(1);
    for (int64_t i = 0; i < nb; ++i) {
        __m256i q[8];
        alignas(16) uint16_t dh[8], mh[8];
        for (int r = 0; r < 8; ++r) {
            const Block& b = reinterpret_cast<const Block*>(wr[r])[i];
            std::memcpy(&dh[r], &b.d, 2);
            std::memcpy(&mh[r], &b.m, 2);
            q[r] = nibbles16(b.qs);
            if constexpr (kQ5) q[r] = _mm256_or_si256(q[r], _mm256_and_si256(bits_to_bytes(b.qh), _mm256_set1_epi8(0x10)));
        }
        if (pf) prefetch_group(wr[0] + pf, sizeof(Block), i);
        const __m256 dw = load_d8(dh), mw = load_d8(mh);
        for (int g = 0; g < G; ++g) {
            const BlockQ8_1& y = reinterpret_cast<const BlockQ8_1*>(a + astride * static_cast<size_t>(g))[i];
            const __m256i yv = loadu(y.qs);
            // The 8 rows' sums folded pairwise as they are formed (hsum8's tree, the same
            // exact int32 adds), so few vectors are live beside the 8 decoded rows.
            auto row = [&](int r) { return _mm256_madd_epi16(_mm256_maddubs_epi16(q[r], yv), ones); };
            const __m256i h01 = _mm256_hadd_epi32(row(0), row(1)), h23 = _mm256_hadd_epi32(row(2), row(3));
            const __m256i lo = _mm256_hadd_epi32(h01, h23);
            const __m256i h45 = _mm256_hadd_epi32(row(4), row(5)), h67 = _mm256_hadd_epi32(row(6), row(7));
            const __m256i hi = _mm256_hadd_epi32(h45, h67);
            const __m256i isum = _mm256_add_epi32(_mm256_permute2x128_si256(lo, hi, 0x20), _mm256_permute2x128_si256(lo, hi, 0x31));
            uint16_t yd16, ys16;
            std::memcpy(&yd16, &y.d, 2);
            std::memcpy(&ys16, &y.s, 2);
            // F16C conversion: exact, as fp16_to_fp32, and inline (no call per token and block).
            const __m256 yd = _mm256_set1_ps(_cvtsh_ss(yd16)), ys = _mm256_set1_ps(_cvtsh_ss(ys16));
            acc[g] = _mm256_add_ps(acc[g], _mm256_mul_ps(_mm256_mul_ps(dw, yd), _mm256_cvtepi32_ps(isum)));
            acc[g] = _mm256_add_ps(acc[g], _mm256_mul_ps(mw, ys));
        }
    }
    for (int g = 0; g < G; ++g) store_out(acc[g], out[g], nr);
}

}  // namespace

template <int G>
void minblock_tile8(DType t, const uint8_t* const* wr, const uint8_t* a, size_t astride, int64_t k, float* const* out, int nr,
                    size_t pf) {
    switch (t) {
        case DType::Q4_1: return minblock_tile<G, BlockQ4_1>(wr, a, astride, k / QK, out, nr, pf);
        case DType::Q5_1: return minblock_tile<G, BlockQ5_1>(wr, a, astride, k / QK, out, nr, pf);
        default: break;
    }
}

#define LS_INSTANTIATE(G)                                                                                              \
    template void minblock_tile8<G>(DType, const uint8_t* const*, const uint8_t*, size_t, int64_t, float* const*, int, size_t);
LS_GEMM_GROUPS_8(LS_INSTANTIATE)
#undef LS_INSTANTIATE

}  // namespace ls::cpu::gemm
#endif
