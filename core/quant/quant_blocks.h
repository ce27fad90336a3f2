// GGUF block layouts (bit-exact with the file format) and small unpacking helpers shared by
// the reference code in core/ and the SIMD kernels in cpu/. Half-precision fields are kept
// as raw uint16_t bits.
#pragma once
#include <cstdint>

#include "core/rules/hd.h"

namespace ls::qb {

constexpr int QK = 32;    // legacy block size
constexpr int QK_K = 256; // K-quant super-block size

struct BlockQ4_0 { uint16_t d; uint8_t qs[QK / 2]; };
struct BlockQ4_1 { uint16_t d, m; uint8_t qs[QK / 2]; };
struct BlockQ5_0 { uint16_t d; uint8_t qh[4]; uint8_t qs[QK / 2]; };
struct BlockQ5_1 { uint16_t d, m; uint8_t qh[4]; uint8_t qs[QK / 2]; };
struct BlockQ8_0 { uint16_t d; int8_t qs[QK]; };
struct BlockQ8_1 { uint16_t d, s; int8_t qs[QK]; };  // s = d * sum(qs)

// Q2_K: 16 sub-blocks of 16; scales byte = scale (low nibble) | min (high nibble).
struct BlockQ2_K { uint8_t scales[QK_K / 16]; uint8_t qs[QK_K / 4]; uint16_t d, dmin; };
// Q3_K: 2 low bits in qs, the high bit in hmask (set = no -4 offset), 16 6-bit scales.
struct BlockQ3_K { uint8_t hmask[QK_K / 8]; uint8_t qs[QK_K / 4]; uint8_t scales[12]; uint16_t d; };
// Q4_K: 8 sub-blocks of 32, 6-bit scales and mins packed in 12 bytes.
struct BlockQ4_K { uint16_t d, dmin; uint8_t scales[12]; uint8_t qs[QK_K / 2]; };
struct BlockQ5_K { uint16_t d, dmin; uint8_t scales[12]; uint8_t qh[QK_K / 8]; uint8_t qs[QK_K / 2]; };
// Q6_K: 4 low bits in ql, 2 high bits in qh, 16 int8 scales, values offset by 32.
struct BlockQ6_K { uint8_t ql[QK_K / 2]; uint8_t qh[QK_K / 4]; int8_t scales[QK_K / 16]; uint16_t d; };
// Q8_K: activation type of the K-quants; float scale, bsums = sums of groups of 16.
struct BlockQ8_K { float d; int8_t qs[QK_K]; int16_t bsums[QK_K / 16]; };

static_assert(sizeof(BlockQ4_0) == 18 && sizeof(BlockQ4_1) == 20 && sizeof(BlockQ5_0) == 22 &&
              sizeof(BlockQ5_1) == 24 && sizeof(BlockQ8_0) == 34 && sizeof(BlockQ8_1) == 36);
static_assert(sizeof(BlockQ2_K) == 84 && sizeof(BlockQ3_K) == 110 && sizeof(BlockQ4_K) == 144 &&
              sizeof(BlockQ5_K) == 176 && sizeof(BlockQ6_K) == 210 && sizeof(BlockQ8_K) == 292);

// Q4_K/Q5_K: the j-th (0..7) 6-bit scale and min. Bytes 0-3 hold scales 0-3 (low 6 bits) and
// the top 2 bits of scales 4-7; bytes 4-7 likewise for mins; bytes 8-11 the low 4 bits of
// scales 4-7 (low nibble) and mins 4-7 (high nibble).
LS_HD inline void k4_scale_min(const uint8_t* s, int j, uint8_t& sc, uint8_t& m) {
    if (j < 4) {
        sc = s[j] & 63;
        m = s[j + 4] & 63;
    } else {
        sc = static_cast<uint8_t>((s[j + 4] & 0x0F) | ((s[j - 4] >> 6) << 4));
        m = static_cast<uint8_t>((s[j + 4] >> 4) | ((s[j] >> 6) << 4));
    }
}

// Q3_K: the i-th (0..15) scale, already minus 32. Low 4 bits: byte i (i<8) low nibble or
// byte i-8 high nibble; high 2 bits: byte 8 + i%4, bit pair i/4.
LS_HD inline int q3k_scale(const uint8_t* s, int i) {
    int lo = i < 8 ? (s[i] & 0x0F) : (s[i - 8] >> 4);
    int hi = (s[8 + (i & 3)] >> (2 * (i >> 2))) & 3;
    return (lo | (hi << 4)) - 32;
}

}  // namespace ls::qb
