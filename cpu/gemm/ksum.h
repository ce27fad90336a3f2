// The exact integer sum of a row's 256 unpacked values against a Q8_K block, sub-block
// scaled: shared by the super-block tiles (kquant_tiles.cpp,
// ternary_tile.cpp, iq_tiles.cpp). Include only where LS_GEMM_AVX2 is set.
#pragma once
#include <cstdint>

#include "cpu/gemm/isa.h"
#include "cpu/gemm/vec256.h"

namespace ls::cpu::gemm {

// Row r's sum over a super-block in 256-bit halves: sum_j madd(maddubs(qb[32j..], y[32j..]),
// sc[j]) in 8 int32 lanes (exact).
[[gnu::always_inline]] inline __m256i ksum256(const uint8_t* qb, const int8_t* yq, const __m256i* sc, __m256i s) {
    for (int j = 0; j < 8; ++j) {
        const __m256i p = _mm256_maddubs_epi16(_mm256_load_si256(reinterpret_cast<const __m256i*>(qb + 32 * j)), loadu(yq + 32 * j));
        s = madd_add(s, p, sc[j]);
    }
    return s;
}


}  // namespace ls::cpu::gemm
