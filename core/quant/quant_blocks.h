// GGUF block layouts (bit-exact with the file format), shared by the reference code in core/,
// the SIMD kernels in cpu/ and the CUDA kernels. Half-precision fields are kept as raw
// uint16_t bits. Where each element sits in them: core/quant/block_access.h.
#pragma once
#include <cstdint>

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

// Lookup-table types: each 4-bit index selects an int8 level (block_access.h's iq4nl_level,
// mxfp4_level), element i < 16 in the low nibble of qs[i], i >= 16 in the high one of qs[i-16].
// IQ4_NL: 32 elements, f16 scale.
struct BlockIQ4_NL { uint16_t d; uint8_t qs[QK / 2]; };
// IQ4_XS: 8 sub-blocks of 32 (IQ4_NL's levels), 6-bit scales biased by 32: low 4 bits in
// scales_l (nibble s % 2 of byte s / 2), high 2 bits in bits 2s..2s+1 of scales_h.
struct BlockIQ4_XS { uint16_t d; uint16_t scales_h; uint8_t scales_l[QK_K / 64]; uint8_t qs[QK_K / 2]; };
// MXFP4 (OCP microscaling): 32 E2M1 values, stored as doubled integers, and one E8M0
// exponent e; an element is level * 2^(e - 128).
struct BlockMXFP4 { uint8_t e; uint8_t qs[QK / 2]; };
// Ternary types, x in {-1, 0, 1} (TQ2_0's 2-bit field also reaches 2) times an f16 scale.
// TQ1_0: five values per byte of qs as a base-3 fixed-point fraction (240 elements), four
// per byte of qh (16 elements).
struct BlockTQ1_0 { uint8_t qs[48]; uint8_t qh[4]; uint16_t d; };
// TQ2_0: element 128n + 32j + l in bits 2j..2j+1 of qs[32n + l], x = field - 1.
struct BlockTQ2_0 { uint8_t qs[QK_K / 4]; uint16_t d; };

static_assert(sizeof(BlockQ4_0) == 18 && sizeof(BlockQ4_1) == 20 && sizeof(BlockQ5_0) == 22 &&
              sizeof(BlockQ5_1) == 24 && sizeof(BlockQ8_0) == 34 && sizeof(BlockQ8_1) == 36);
static_assert(sizeof(BlockQ2_K) == 84 && sizeof(BlockQ3_K) == 110 && sizeof(BlockQ4_K) == 144 &&
              sizeof(BlockQ5_K) == 176 && sizeof(BlockQ6_K) == 210 && sizeof(BlockQ8_K) == 292);
// Grid i-quants: groups of 8 (IQ3: 4) elements index a codebook (core/quant/iq_grid_words.h),
// with sign bits and a sub-block scale; core/quant/iq_access.h reads them.
struct BlockIQ2_XXS { uint16_t d; uint8_t qs[QK_K / 4]; };                      // per 32: 4 indices, u32 signs + scale
struct BlockIQ2_XS { uint16_t d; uint16_t qs[QK_K / 8]; uint8_t scales[QK_K / 32]; };  // 9-bit index, 7 sign bits
struct BlockIQ2_S { uint16_t d; uint8_t qs[QK_K / 4]; uint8_t qh[QK_K / 32]; uint8_t scales[QK_K / 32]; };
struct BlockIQ3_XXS { uint16_t d; uint8_t qs[3 * QK_K / 8]; };                  // 64 indices, 8 u32 signs + scale
struct BlockIQ3_S { uint16_t d; uint8_t qs[QK_K / 4]; uint8_t qh[QK_K / 32]; uint8_t signs[QK_K / 8]; uint8_t scales[QK_K / 64]; };
struct BlockIQ1_S { uint16_t d; uint8_t qs[QK_K / 8]; uint16_t qh[QK_K / 32]; };
struct BlockIQ1_M { uint8_t qs[QK_K / 8]; uint8_t qh[QK_K / 16]; uint8_t scales[QK_K / 32]; };  // f16 d in the scales' top nibbles

static_assert(sizeof(BlockIQ2_XXS) == 66 && sizeof(BlockIQ2_XS) == 74 && sizeof(BlockIQ2_S) == 82 &&
              sizeof(BlockIQ3_XXS) == 98 && sizeof(BlockIQ3_S) == 110 && sizeof(BlockIQ1_S) == 50 && sizeof(BlockIQ1_M) == 56);
static_assert(sizeof(BlockIQ4_NL) == 18 && sizeof(BlockIQ4_XS) == 136 && sizeof(BlockMXFP4) == 17 &&
              sizeof(BlockTQ1_0) == 54 && sizeof(BlockTQ2_0) == 66);

}  // namespace ls::qb
