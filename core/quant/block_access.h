// Where each element and sub-block scale of a GGUF block lives: the one definition of the
// bit layouts that the reference (core/quant/quant_legacy.cpp, quant_k.cpp) and the CUDA
// kernels (backends/cuda/quant_device.cuh) both decode with, written with LS_HD so that
// nvcc compiles the same functions for the device. A second copy could drift in one bit
// position and still pass on the blocks a test happens to draw.
#pragma once
#include <cstdint>

#include "core/quant/quant_blocks.h"
#include "core/quant/quant_levels.h"
#include "core/rules/hd.h"

namespace ls::qb {

// ---------------------------------------------------------------- 32-element blocks

// Element i of a 32-block: low nibble of qs[i] for i < 16, high nibble of qs[i-16] otherwise.
LS_HD inline int nibble(const uint8_t* qs, int i) { return i < 16 ? (qs[i] & 0x0F) : (qs[i - 16] >> 4); }
// Q5_0/Q5_1: the 32 fifth bits, little-endian as in the file (byte by byte, so that neither
// the host's byte order nor the device's alignment matters).
LS_HD inline uint32_t load_qh(const uint8_t* p) {
    return uint32_t(p[0]) | (uint32_t(p[1]) << 8) | (uint32_t(p[2]) << 16) | (uint32_t(p[3]) << 24);
}
LS_HD inline int fifth_bit(uint32_t qh, int i) { return static_cast<int>((qh >> i) & 1); }

// ---------------------------------------------------------------- K-quant sub-block scales

// Q2_K: sub-block s (0..15) of 16: scale in the low nibble of scales[s], min in the high one.
LS_HD inline int q2k_scale(const uint8_t* scales, int s) { return scales[s] & 0x0F; }
LS_HD inline int q2k_min(const uint8_t* scales, int s) { return scales[s] >> 4; }

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

// ---------------------------------------------------------------- K-quant elements (0..255)

// Q2_K element e = 128n + 32j + l: bits 2j..2j+1 of qs[32n + l]; sub-block e/16.
LS_HD inline int q2k_value(const BlockQ2_K& b, int e) {
    const int n = e / 128, j = (e % 128) / 32, l = e % 32;
    return (b.qs[32 * n + l] >> (2 * j)) & 3;
}
// Q3_K element e = 128n + 32j + l: low bits 2j.. of qs[32n + l], high bit (4n + j) of
// hmask[l]; value (low) - 4 when the high bit is clear.
LS_HD inline int q3k_value(const BlockQ3_K& b, int e) {
    const int n = e / 128, j = (e % 128) / 32, l = e % 32;
    const int lo = (b.qs[32 * n + l] >> (2 * j)) & 3;
    const int hi = (b.hmask[l] >> (4 * n + j)) & 1;
    return lo - (hi ? 0 : 4);
}
// Q4_K element e = 64c + 32h + l: nibble h of qs[32c + l]; sub-block 2c + h.
LS_HD inline int q4k_value(const uint8_t* qs, int e) {
    const int c = e / 64, h = (e % 64) / 32, l = e % 32;
    return (qs[32 * c + l] >> (4 * h)) & 0x0F;
}
// Q5_K adds bit (e/32) of qh[e % 32] as the fifth bit.
LS_HD inline int q5k_value(const BlockQ5_K& b, int e) { return q4k_value(b.qs, e) | (((b.qh[e % 32] >> (e / 32)) & 1) << 4); }
// Q6_K element e = 128n + 32k + l: ql nibble (k / 2) of ql[64n + 32(k % 2) + l], high bits
// 2k..2k+1 of qh[32n + l]; stored with offset 32; sub-block e/16.
LS_HD inline int q6k_value(const BlockQ6_K& b, int e) {
    const int n = e / 128, k = (e % 128) / 32, l = e % 32;
    const int lo = (b.ql[64 * n + 32 * (k % 2) + l] >> (4 * (k / 2))) & 0x0F;
    const int hi = (b.qh[32 * n + l] >> (2 * k)) & 3;
    return (lo | (hi << 4)) - 32;
}

// ---------------------------------------------------------------- lookup-table types

// The 16 int8 levels of IQ4_NL / IQ4_XS and of MXFP4 (E2M1 doubled: 0 0.5 1 1.5 2 3 4 6 and
// their negatives; core/quant/quant_levels.h, shared with the shaders), packed 8 to a 64-bit
// constant so host and device read the same numbers without a table in memory.
LS_HD inline int lut16(uint64_t lo, uint64_t hi, int i) {
    return static_cast<int8_t>(static_cast<uint8_t>(((i < 8 ? lo : hi) >> (8 * (i & 7))) & 0xFF));
}
constexpr uint32_t kIQ4NLWords[4] = {LS_IQ4NL_LEVEL_WORDS}, kMXFP4Words[4] = {LS_MXFP4_LEVEL_WORDS};
constexpr uint64_t kIQ4NLLo = kIQ4NLWords[0] | uint64_t(kIQ4NLWords[1]) << 32, kIQ4NLHi = kIQ4NLWords[2] | uint64_t(kIQ4NLWords[3]) << 32;
constexpr uint64_t kMXFP4Lo = kMXFP4Words[0] | uint64_t(kMXFP4Words[1]) << 32, kMXFP4Hi = kMXFP4Words[2] | uint64_t(kMXFP4Words[3]) << 32;
static_assert(kIQ4NLLo == 0xF6EADDCFBFAD9881ull && kMXFP4Hi == 0xF4F8FAFCFDFEFF00ull);
LS_HD inline int iq4nl_level(int i) { return lut16(kIQ4NLLo, kIQ4NLHi, i); }
LS_HD inline int mxfp4_level(int i) { return lut16(kMXFP4Lo, kMXFP4Hi, i); }
// IQ4_XS: the scale of sub-block s (0..7), minus its bias: -32..31.
LS_HD inline int iq4xs_scale(const BlockIQ4_XS& b, int s) {
    const int lo = (b.scales_l[s / 2] >> (4 * (s % 2))) & 0x0F;
    const int hi = (b.scales_h >> (2 * s)) & 3;
    return (lo | (hi << 4)) - 32;
}
// IQ4_XS element e: sub-block e / 32, index nibble(qs + 16 * (e / 32), e % 32).
LS_HD inline int iq4xs_value(const BlockIQ4_XS& b, int e) { return iq4nl_level(nibble(b.qs + 16 * (e / 32), e % 32)); }
// MXFP4's scale, 2^(e - 128) (half of E8M0's 2^(e - 127), the levels being doubled), as the
// bits of a float: subnormal for e < 2, exact for every e (ggml's e8m0_to_fp32_half).
LS_HD inline uint32_t mxfp4_scale_bits(uint8_t e) { return e < 2 ? 0x00200000u << e : static_cast<uint32_t>(e - 1) << 23; }

// ---------------------------------------------------------------- ternary types

// TQ1_0 element e (value -1..1): a byte q holding base-3 digits as a fraction q / 256 ~
// sum d_k 3^-(k+1); digit n is ((q * 3^n mod 256) * 3) >> 8. Elements 0..159 are digit e/32
// of qs[e % 32], 160..239 digit (e-160)/16 of qs[32 + e % 16], 240..255 digit (e-240)/4 of qh[e % 4].
LS_HD inline int tq1_value(const BlockTQ1_0& b, int e) {
    int byte, n;
    if (e < 160) { byte = b.qs[e % 32]; n = e / 32; }
    else if (e < 240) { byte = b.qs[32 + (e - 160) % 16]; n = (e - 160) / 16; }
    else { byte = b.qh[(e - 240) % 4]; n = (e - 240) / 4; }
    int p = 1;
    for (int k = 0; k < n; ++k) p *= 3;
    const int q = (byte * p) & 0xFF;
    return ((q * 3) >> 8) - 1;
}
// TQ2_0 element e = 128n + 32j + l: bits 2j..2j+1 of qs[32n + l], minus 1 (-1..2).
LS_HD inline int tq2_value(const BlockTQ2_0& b, int e) {
    const int n = e / 128, j = (e % 128) / 32, l = e % 32;
    return ((b.qs[32 * n + l] >> (2 * j)) & 3) - 1;
}

}  // namespace ls::qb
