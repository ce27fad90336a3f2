// The exact integer block sums of the 8-row tile (legacy_tile8.cpp) on AVX2: maddubs pairs
// widened by madd.
#pragma once
#include <cstdint>

#include "cpu/gemm/isa.h"
#include "cpu/gemm/vec256.h"

namespace ls::cpu::gemm {

// s[g] lane r = sum over the block of x(row r) * y(token g), offset by D::kOff as D::dec
// leaves it; q the block transposed (q[j] lane r = bytes 4j..4j+3 of row r), for kOff 0
// as |x| with the signs in s8.
template <class D, int S>
[[gnu::always_inline]] inline void legacy_block_sums(const __m256i* q, [[maybe_unused]] const __m256i* s8, const int8_t* const* yq,
                                                     __m256i* s) {
    const __m256i ones = _mm256_set1_epi16(1);
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
}

}  // namespace ls::cpu::gemm
