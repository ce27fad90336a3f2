// Q4_1 and Q5_1 (a scale and a min per 32-element block) over Q8_1 activations, in 8-row
// tiles. Per block each row is decoded once to 32 unsigned bytes (0..15, or 0..31 with the fifth
// bits). Four or more tokens: the 8 rows transposed once into lanes and each token's bytes
// broadcast against them (legacy_block_sums' unsigned form, as the Q4_0/Q5_0 tiles), so the 8
// rows' exact block sums come with no horizontal sum; fewer tokens: per token maddubs + madd
// per row (pair sums below 2 * 31 * 128, exact) and one hadd tree. The float part follows
// core/quant/quant_legacy.cpp per block:
//     sum = sum + (d_w * d_a) * float(isum);  sum = sum + m_w * s_a
// each operation rounded, no fused multiply-add. The exact integers do not depend on the
// form or the instruction set.
#include "cpu/gemm/tiles.h"

#if LS_GEMM_AVX2
#include <cstring>
#include <type_traits>

#include "core/quant/quant.h"
#include "core/quant/quant_blocks.h"
#include "cpu/gemm/act_layout.h"
#include "cpu/avx2_unpack.h"
#if LS_GEMM_VNNI
#include "cpu/gemm/block_sums_vnni.h"
#else
#include "cpu/gemm/block_sums_avx2.h"
#endif
#include "cpu/gemm/vec256.h"

namespace ls::cpu::gemm {
using namespace ls::qb;

namespace {

// legacy_block_sums' unsigned form (rows as lanes, the block transposed once, a token's bytes
// broadcast): Q4_1/Q5_1 values are 0..31 with no offset to take off afterwards; on AVX2 any
// nonzero kOff selects that form, VNNI's dpbusd has only it.
struct UnsignedValues {
    static constexpr int kOff = 1;
};
// Tokens per call from which the transpose (24 shuffles a block, once for all tokens) costs
// less than a horizontal sum per token; fewer go row by row.
constexpr int kTransposeFrom = 4;

template <int G, class Block>
void minblock_tile(const uint8_t* const* wr, const uint8_t* a, size_t astride, int64_t nb, float* const* out, int nr, size_t pf) {
    constexpr bool kQ5 = std::is_same_v<Block, BlockQ5_1>;
    const size_t extra_off = minblock_extra_off(nb * QK);  // the activation's d and s as floats
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
        if constexpr (G >= kTransposeFrom) {
            transpose8x8_i32(q);  // q[j] lane r = bytes 4j..4j+3 of row r
            for (int g0 = 0; g0 < G; g0 += 4) {
                const int8_t* yq[4];
                __m256i isum[4];
                for (int g = 0; g < 4; ++g) yq[g] = reinterpret_cast<const BlockQ8_1*>(a + astride * static_cast<size_t>(g0 + g))[i].qs;
                legacy_block_sums<UnsignedValues, 4>(q, nullptr, yq, isum);
                for (int g = 0; g < 4; ++g) {
                    const float* yf = reinterpret_cast<const float*>(a + astride * static_cast<size_t>(g0 + g) + extra_off);
                    const __m256 yd = _mm256_set1_ps(yf[i]), ys = _mm256_set1_ps(yf[nb + i]);
                    acc[g0 + g] = _mm256_add_ps(acc[g0 + g], _mm256_mul_ps(_mm256_mul_ps(dw, yd), _mm256_cvtepi32_ps(isum[g])));
                    acc[g0 + g] = _mm256_add_ps(acc[g0 + g], _mm256_mul_ps(mw, ys));
                }
            }
            continue;
        }
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
            const float* yf = reinterpret_cast<const float*>(a + astride * static_cast<size_t>(g) + extra_off);
            const __m256 yd = _mm256_set1_ps(yf[i]), ys = _mm256_set1_ps(yf[nb + i]);
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
