// The exact integer sum of a row's 256 unpacked values against a Q8_K block, sub-block
// scaled: shared by the super-block tiles (kquant_tiles.cpp,
// ternary_tile.cpp, iq_tiles.cpp). Include only where LS_GEMM_AVX2 is set.
#pragma once
#include <cstdint>

#include "cpu/gemm/isa.h"
#include "cpu/gemm/vec256.h"

namespace ls::cpu::gemm {

// Row r's sum over a super-block in 256-bit halves: sum_j madd(maddubs(qb[32j..], y[32j..]),
// sc[j]) in 8 int32 lanes (exact), the AVX2 twin of ksum512.
[[gnu::always_inline]] inline __m256i ksum256(const uint8_t* qb, const int8_t* yq, const __m256i* sc, __m256i s) {
    for (int j = 0; j < 8; ++j) {
        const __m256i p = _mm256_maddubs_epi16(_mm256_load_si256(reinterpret_cast<const __m256i*>(qb + 32 * j)), loadu(yq + 32 * j));
        s = _mm256_add_epi32(s, _mm256_madd_epi16(p, sc[j]));
    }
    return s;
}

#if LS_GEMM_K512
// Row r's sum over a super-block: sum_m madd(maddubs(qb[64m..], y[64m..]), sc[m]) in 16
// lanes, folded to 8 (exact int32 adds). sc[m] holds the int16 scales of 256-bit halves 2m
// and 2m+1 (their ymm forms side by side).
[[gnu::always_inline]] inline __m256i ksum512(const uint8_t* qb, const __m512i* y4, const __m512i* sc, __m512i s) {
    for (int m = 0; m < 4; ++m) {
        const __m512i p = _mm512_maddubs_epi16(_mm512_load_si512(qb + 64 * m), y4[m]);
        s = _mm512_add_epi32(s, _mm512_madd_epi16(p, sc[m]));
    }
    return _mm256_add_epi32(_mm512_castsi512_si256(s), _mm512_extracti64x4_epi64(s, 1));
}
[[gnu::always_inline]] inline void join_scales(const __m256i* scv, __m512i* scz) {
    for (int m = 0; m < 4; ++m) scz[m] = _mm512_inserti64x4(_mm512_castsi256_si512(scv[2 * m]), scv[2 * m + 1], 1);
}
#endif

}  // namespace ls::cpu::gemm
