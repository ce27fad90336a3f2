// The exact integer block sums of the 8-row tile (legacy_tile8.cpp) with VNNI: one dpbusd sums
// four unsigned x signed byte products into each 32-bit lane, with no int16 saturation.
#pragma once
#include <cstdint>

#include "cpu/gemm/isa.h"
#include "cpu/gemm/vec256.h"

namespace ls::cpu::gemm {

[[gnu::always_inline]] inline __m256i dpbusd(__m256i acc, __m256i u, __m256i s) {
#if defined(__AVX512VNNI__) && defined(__AVX512VL__)
    return _mm256_dpbusd_epi32(acc, u, s);
#else
    return _mm256_dpbusd_avx_epi32(acc, u, s);
#endif
}

// s[g] lane r = sum over the block of u(row r) * y(token g), u the unsigned weights of
// D::dec, q the block transposed (q[j] lane r = bytes 4j..4j+3 of row r).
template <class D, int S>
[[gnu::always_inline]] inline void legacy_block_sums(const __m256i* q, [[maybe_unused]] const __m256i* s8, const int8_t* const* yq,
                                                     __m256i* s) {
    // u in [0, 255], y in [-127, 127]: each lane sums 4 products exactly (the tile takes the
    // offset off). Fewer than 4 tokens: 2 or 4 chains per token, so that
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
}

}  // namespace ls::cpu::gemm
