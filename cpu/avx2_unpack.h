// AVX2 unpacking of packed quant bits (4-bit nibbles, 1-bit high bits) into bytes, shared by
// the row conversions (quant_rows.cpp) and the GEMM tiles (cpu/gemm/).
// Include only inside code compiled for AVX2.
#pragma once
#include <immintrin.h>

#include <cstdint>
#include <cstring>

namespace ls::cpu {

// 32 nibbles of a legacy block as bytes 0..15: low nibbles first, then high nibbles.
inline __m256i nibbles16(const uint8_t* qs) {
    const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(qs));
    return _mm256_and_si256(_mm256_set_m128i(_mm_srli_epi16(v, 4), v), _mm256_set1_epi8(0x0F));
}

// Byte i = 0xFF where bit i of the 32-bit word is set.
inline __m256i bits_to_bytes(const uint8_t* qh) {
    uint32_t w;
    std::memcpy(&w, qh, 4);
    const __m256i shuf = _mm256_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1,
                                          2, 2, 2, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3);
    const __m256i v = _mm256_shuffle_epi8(_mm256_set1_epi32(static_cast<int>(w)), shuf);
    const __m256i bit = _mm256_set1_epi64x(static_cast<long long>(0x8040201008040201ULL));
    return _mm256_cmpeq_epi8(_mm256_and_si256(v, bit), bit);
}

}  // namespace ls::cpu
