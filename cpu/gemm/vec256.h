// 256-bit building blocks of the tiles: loads, the 8x8 transpose that makes rows into
// lanes, horizontal sums, stores of a partial row group, and the weight-stream prefetch.
// Include only where LS_GEMM_AVX2 is set.
#pragma once
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "cpu/gemm/isa.h"

namespace ls::cpu::gemm {

inline __m256i loadu(const void* p) { return _mm256_loadu_si256(static_cast<const __m256i*>(p)); }

// s + madd(p, w): int16 pairs multiplied and summed into int32 lanes, then added. With VNNI one
// dpwssd does both (the same exact int32 result; int32 adds wrap alike, and never do here).
[[gnu::always_inline]] inline __m256i madd_add(__m256i s, __m256i p, __m256i w) {
#if LS_GEMM_VNNI && defined(__AVX512VNNI__) && defined(__AVX512VL__)
    return _mm256_dpwssd_epi32(s, p, w);
#elif LS_GEMM_VNNI
    return _mm256_dpwssd_avx_epi32(s, p, w);
#else
    return _mm256_add_epi32(s, _mm256_madd_epi16(p, w));
#endif
}
// Into L2, not L1: the stream runs 16 rows (10-20 KiB) ahead, more lines than L1's miss
// buffers hold, so T0 prefetches queue behind each other or are dropped; L2 keeps more in
// flight. Default model decode on the 2-core AVX-512 EPYC: the Q8_0 output head 6.6-7.9 ms
// -> 5.3-5.9 ms, tg128 +8-20% (README, CPU measurements).
inline void prefetch(const uint8_t* p) { _mm_prefetch(reinterpret_cast<const char*>(p), _MM_HINT_T1); }
// Memory-bound products: the 8 rows of a group are contiguous, so while block i of this group
// is computed, prefetch the i-th slice (8 blocks' worth of bytes, whole cache lines) of the
// group starting at `ahead`: one sequential stream instead of 8 interleaved ones.
inline void prefetch_group(const uint8_t* ahead, size_t block_bytes, int64_t i, size_t rows = 8) {
    const size_t per = (rows * block_bytes + 63) / 64 * 64;
    const uint8_t* p = ahead + per * static_cast<size_t>(i);
    for (size_t o = 0; o < per; o += 64) prefetch(p + o);
}

// v[0..7] (8 x int32 each) -> lane r = sum of the 8 lanes of v[r]. Exact (int32).
inline __m256i hsum8(const __m256i* v) {
    const __m256i h01 = _mm256_hadd_epi32(v[0], v[1]), h23 = _mm256_hadd_epi32(v[2], v[3]);
    const __m256i h45 = _mm256_hadd_epi32(v[4], v[5]), h67 = _mm256_hadd_epi32(v[6], v[7]);
    const __m256i a = _mm256_hadd_epi32(h01, h23), b = _mm256_hadd_epi32(h45, h67);
    return _mm256_add_epi32(_mm256_permute2x128_si256(a, b, 0x20), _mm256_permute2x128_si256(a, b, 0x31));
}
// 8 fp16 scales (stride bytes apart, at byte offset off of each block) as floats.
inline __m256 load_d8(const uint16_t* d) { return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(d))); }

inline void store_out(__m256 v, float* out, int nr) {
    if (nr == 8) {
        _mm256_storeu_ps(out, v);
    } else {
        alignas(32) float t[8];
        _mm256_store_ps(t, v);
        std::copy(t, t + nr, out);
    }
}

// 4 bytes at p in every 32-bit lane.
inline __m256i bcast4(const int8_t* p) {
    int32_t v;
    std::memcpy(&v, p, 4);
    return _mm256_set1_epi32(v);
}
// 8x8 transpose of 32-bit elements: afterwards v[j] lane r = old v[r] lane j.
[[gnu::always_inline]] inline void transpose8x8_i32(__m256i* v) {
    __m256i t[8], u[8];
    for (int k = 0; k < 4; ++k) {
        t[2 * k] = _mm256_unpacklo_epi32(v[2 * k], v[2 * k + 1]);
        t[2 * k + 1] = _mm256_unpackhi_epi32(v[2 * k], v[2 * k + 1]);
    }
    for (int k = 0; k < 2; ++k) {
        u[4 * k + 0] = _mm256_unpacklo_epi64(t[4 * k], t[4 * k + 2]);
        u[4 * k + 1] = _mm256_unpackhi_epi64(t[4 * k], t[4 * k + 2]);
        u[4 * k + 2] = _mm256_unpacklo_epi64(t[4 * k + 1], t[4 * k + 3]);
        u[4 * k + 3] = _mm256_unpackhi_epi64(t[4 * k + 1], t[4 * k + 3]);
    }
    // u[j] (j < 4): rows 0-3, element j in the low half and j+4 in the high; u[4+j]: rows 4-7.
    for (int j = 0; j < 4; ++j) {
        v[j] = _mm256_permute2x128_si256(u[j], u[4 + j], 0x20);
        v[j + 4] = _mm256_permute2x128_si256(u[j], u[4 + j], 0x31);
    }
}

}  // namespace ls::cpu::gemm
