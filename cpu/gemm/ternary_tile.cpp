// TQ1_0 and TQ2_0 / Q8_K in 8-row tiles: per row and super-block the 256 stored digits u
// (x = u - 1; TQ2_0's 2-bit fields, TQ1_0's base-3 digits) unpacked once; a token's sum is
// sum u * y by maddubs (pairs at most 2 * 3 * 127) and madd, minus sum y (the Q8_K bsums):
// the exact integers of core/quant/quant_ternary.cpp, then its float chain. The sums are
// unscaled, so one form serves every instruction set.
#include "cpu/gemm/tiles.h"

#if LS_GEMM_AVX2
#include <cstring>
#include <type_traits>

#include "core/quant/block_access.h"
#include "core/quant/quant_blocks.h"
#include "cpu/gemm/ksum.h"
#include "cpu/gemm/vec256.h"

namespace ls::cpu::gemm {
using namespace ls::qb;

namespace {
// Base-3 digit n (0..4) of each byte of w: ((byte * 3^n mod 256) * 3) >> 8, in 16-bit lanes
// for the even and the odd bytes (a byte product must not carry into its neighbour).
[[gnu::always_inline]] inline __m256i base3_digit(__m256i w, int n) {
    static constexpr short kPow3[5] = {1, 3, 9, 27, 81};
    const __m256i lo = _mm256_set1_epi16(0x00FF), p = _mm256_set1_epi16(kPow3[n]), three = _mm256_set1_epi16(3);
    auto digit = [&](__m256i b) {
        const __m256i q = _mm256_and_si256(_mm256_mullo_epi16(b, p), lo);
        return _mm256_srli_epi16(_mm256_mullo_epi16(q, three), 8);
    };
    const __m256i even = digit(_mm256_and_si256(w, lo)), odd = digit(_mm256_srli_epi16(w, 8));
    return _mm256_or_si256(even, _mm256_slli_epi16(odd, 8));
}

void unpack(const BlockTQ2_0& b, uint8_t* u) {
    const __m256i m3 = _mm256_set1_epi8(0x03);
    for (int n = 0; n < 2; ++n) {
        const __m256i q = loadu(b.qs + 32 * n);
        for (int j = 0; j < 4; ++j)
            _mm256_store_si256(reinterpret_cast<__m256i*>(u + 128 * n + 32 * j), _mm256_and_si256(_mm256_srli_epi16(q, 2 * j), m3));
    }
}
void unpack(const BlockTQ1_0& b, uint8_t* u) {
    // Elements 0..159: digit n of qs[0..31] at 32n; 160..239: digit n of qs[32..47] at
    // 160 + 16n; 240..255: digit n of qh[0..3] at 240 + 4n (block_access.h tq1_value).
    const __m256i w0 = loadu(b.qs);
    const __m256i w1 = _mm256_castsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b.qs + 32)));
    for (int n = 0; n < 5; ++n) {
        _mm256_store_si256(reinterpret_cast<__m256i*>(u + 32 * n), base3_digit(w0, n));
        _mm_storeu_si128(reinterpret_cast<__m128i*>(u + 160 + 16 * n), _mm256_castsi256_si128(base3_digit(w1, n)));
    }
    for (int e = 240; e < 256; ++e) u[e] = static_cast<uint8_t>(tq1_value(b, e) + 1);
}

template <int G, class Block>
void ternary_tile(const uint8_t* const* wr, const uint8_t* a, size_t astride, int64_t nb, float* const* out, int nr, size_t pf) {
    alignas(64) uint8_t qb[8][QK_K];
    __m256i ones[8];
    for (auto& o : ones) o = _mm256_set1_epi16(1);
    __m256 acc[G];
    for (int g = 0; g < G; ++g) acc[g] = _mm256_setzero_ps();
    for (int64_t i = 0; i < nb; ++i) {
        alignas(16) uint16_t dh[8];
        for (int r = 0; r < 8; ++r) {
            const Block& b = reinterpret_cast<const Block*>(wr[r])[i];
            std::memcpy(&dh[r], &b.d, 2);
            unpack(b, qb[r]);
        }
        if (pf) prefetch_group(wr[0] + pf, sizeof(Block), i);
        const __m256 dw = load_d8(dh);
        for (int g = 0; g < G; ++g) {
            const BlockQ8_K& y = reinterpret_cast<const BlockQ8_K*>(a + astride * static_cast<size_t>(g))[i];
            int32_t ysum = 0;
            for (int s = 0; s < 16; ++s) ysum += y.bsums[s];
            __m256i v[8];
            for (int r = 0; r < 8; ++r) v[r] = ksum256(qb[r], y.qs, ones, _mm256_setzero_si256());
            const __m256i isum = _mm256_sub_epi32(hsum8(v), _mm256_set1_epi32(ysum));
            float yd;
            std::memcpy(&yd, &y.d, 4);
            // sum = sum + (d_a * d_w) * isum: the product rounded, then the sum; no fma.
            acc[g] = _mm256_add_ps(acc[g], _mm256_mul_ps(_mm256_mul_ps(dw, _mm256_set1_ps(yd)), _mm256_cvtepi32_ps(isum)));
        }
    }
    for (int g = 0; g < G; ++g) store_out(acc[g], out[g], nr);
}
}  // namespace

template <int G>
void ternary_tile8(DType t, const uint8_t* const* wr, const uint8_t* a, size_t astride, int64_t k, float* const* out, int nr,
                   size_t pf) {
    if (t == DType::TQ1_0) return ternary_tile<G, BlockTQ1_0>(wr, a, astride, k / QK_K, out, nr, pf);
    if (t == DType::TQ2_0) return ternary_tile<G, BlockTQ2_0>(wr, a, astride, k / QK_K, out, nr, pf);
}
static_assert(kMaxGroup8 == 32, "instantiate every group size up to kMaxGroup8");

#define LS_INSTANTIATE(G)                                                                                              \
    template void ternary_tile8<G>(DType, const uint8_t* const*, const uint8_t*, size_t, int64_t, float* const*, int, size_t);
LS_GEMM_GROUPS_8(LS_INSTANTIATE)
#undef LS_INSTANTIATE

}  // namespace ls::cpu::gemm
#endif  // LS_GEMM_AVX2
