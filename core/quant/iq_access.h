// Where each element of a grid i-quant block lives and what integer it stands for. Every
// type's element is (d * ls * v) / den with v and ls integers: v the codebook value times its
// sign (IQ1: 8 * value +- 1, the +-1/8 delta made integer), ls the sub-block scale, den a power
// of two per type (iq_den). The reference dequantization multiplies in the gguf package's
// order; the dot products take the exact integer sum of ls * v * y and scale by 1/den last.
// Host only: the codebooks here are the C++ tables of iq_grids.h; CUDA and GLSL read the same
// words (iq_grid_words.h).
#pragma once
#include <cstdint>

#include "core/quant/iq_grids.h"
#include "core/quant/quant_blocks.h"

namespace ls::qb {

inline int grid_byte(uint64_t entry, int j) { return static_cast<int8_t>(static_cast<uint8_t>(entry >> (8 * j))); }
inline uint32_t le32(const uint8_t* p) { return uint32_t(p[0]) | uint32_t(p[1]) << 8 | uint32_t(p[2]) << 16 | uint32_t(p[3]) << 24; }
inline int sign_of(uint32_t bits, int j) { return (bits >> j) & 1 ? -1 : 1; }

// Elements per sub-block scale, and the scale's denominator.
template <class B> constexpr int kIqSub = 32;
template <> constexpr int kIqSub<BlockIQ2_XS> = 16;
template <> constexpr int kIqSub<BlockIQ2_S> = 16;
template <> constexpr int kIqSub<BlockIQ1_M> = 16;
template <class B> constexpr int kIqDen = 8;
template <> constexpr int kIqDen<BlockIQ3_XXS> = 4;
template <> constexpr int kIqDen<BlockIQ3_S> = 1;
template <> constexpr int kIqDen<BlockIQ4_XS> = 1;  // IQ4_XS (sub-blocks of 32) shares the tile of cpu/gemm/iq_tiles.cpp

// IQ2_XXS: sub-block ib has grid bytes qs[8ib..8ib+3] and a u32 at qs[8ib+4]: 7-bit sign
// indices of its 4 groups in bits 7l.., scale in bits 28..31 (ls = 2 * scale + 1).
inline int iq_scale(const BlockIQ2_XXS& b, int s) { return 2 * static_cast<int>(le32(b.qs + 8 * s + 4) >> 28) + 1; }
inline int iq_value(const BlockIQ2_XXS& b, int e) {
    const int ib = e / 32, l = (e % 32) / 8, j = e % 8;
    const uint32_t signs = kIQSigns[(le32(b.qs + 8 * ib + 4) >> (7 * l)) & 127];
    return grid_byte(kIQ2XXSGrid[b.qs[8 * ib + l]], j) * sign_of(signs, j);
}
// IQ2_XS: group g = e / 8 is qs[g]: index in bits 0..8, sign index in 9..15; scale of the 16
// elements e / 16: nibble of scales[e / 32].
inline int iq_scale(const BlockIQ2_XS& b, int s) { return 2 * ((b.scales[s / 2] >> (4 * (s % 2))) & 0x0F) + 1; }
inline int iq_value(const BlockIQ2_XS& b, int e) {
    const uint16_t q = b.qs[e / 8];
    return grid_byte(kIQ2XSGrid[q & 511], e % 8) * sign_of(kIQSigns[q >> 9], e % 8);
}
// IQ2_S: group g: index qs[g] with bits 2(g%4).. of qh[g/4] as bits 8..9; its 8 sign bits in
// qs[32 + g]; scales as IQ2_XS.
inline int iq_scale(const BlockIQ2_S& b, int s) { return 2 * ((b.scales[s / 2] >> (4 * (s % 2))) & 0x0F) + 1; }
inline int iq_value(const BlockIQ2_S& b, int e) {
    const int g = e / 8;
    const int idx = b.qs[g] | (((b.qh[g / 4] >> (2 * (g % 4))) & 3) << 8);
    return grid_byte(kIQ2SGrid[idx], e % 8) * sign_of(b.qs[32 + g], e % 8);
}
// IQ3_XXS: 4 elements per index qs[e / 4]; sub-block ib's u32 at qs[64 + 4ib] as IQ2_XXS's.
inline int iq_scale(const BlockIQ3_XXS& b, int s) { return 2 * static_cast<int>(le32(b.qs + 64 + 4 * s) >> 28) + 1; }
inline int iq_value(const BlockIQ3_XXS& b, int e) {
    const int ib = e / 32, l = (e % 32) / 8, j = e % 8;
    const uint32_t signs = kIQSigns[(le32(b.qs + 64 + 4 * ib) >> (7 * l)) & 127];
    return grid_byte(kIQ3XXSGrid[b.qs[e / 4]], e % 4) * sign_of(signs, j);
}
// IQ3_S: index k = e / 4 is qs[k] with bit k%8 of qh[k/8] as bit 8; sign bit e%8 of signs[e/8];
// scale nibble of scales[ib / 2] (ls = 2 * scale + 1, no denominator).
inline int iq_scale(const BlockIQ3_S& b, int s) { return 2 * ((b.scales[s / 2] >> (4 * (s % 2))) & 0x0F) + 1; }
inline int iq_value(const BlockIQ3_S& b, int e) {
    const int k = e / 4;
    const int idx = b.qs[k] | (((b.qh[k / 8] >> (k % 8)) & 1) << 8);
    return grid_byte(kIQ3SGrid[idx], e % 4) * sign_of(b.signs[e / 8], e % 8);
}
// IQ1_S: group g: index qs[g] with bits 3(g%4).. of qh[g/4] as bits 8..10; qh[ib] bits 12..14
// the scale, bit 15 the delta's sign (set: -1/8). Value 8 * grid + delta * 8.
inline int iq_scale(const BlockIQ1_S& b, int s) { return 2 * ((b.qh[s] >> 12) & 7) + 1; }
inline int iq_value(const BlockIQ1_S& b, int e) {
    const int g = e / 8;
    const int idx = b.qs[g] | (((b.qh[g / 4] >> (3 * (g % 4))) & 7) << 8);
    return 8 * grid_byte(kIQ1SGrid[idx], e % 8) + ((b.qh[g / 4] & 0x8000) ? -1 : 1);
}
// IQ1_M: group g: index qs[g] with bits 0..2 of nibble g%2 of qh[g/2] as bits 8..10, bit 3
// of that nibble the delta's sign; 16 3-bit scales, scale t in bits 3(t%4).. of the u16 t/4;
// the f16 block scale in the top nibbles of the four u16 (iq1m_d).
inline uint16_t iq1m_u16(const BlockIQ1_M& b, int w) { return static_cast<uint16_t>(b.scales[2 * w] | (b.scales[2 * w + 1] << 8)); }
inline uint16_t iq1m_d(const BlockIQ1_M& b) {
    return static_cast<uint16_t>((iq1m_u16(b, 0) >> 12) | ((iq1m_u16(b, 1) >> 8) & 0x00F0) | ((iq1m_u16(b, 2) >> 4) & 0x0F00) |
                                 (iq1m_u16(b, 3) & 0xF000));
}
inline int iq_scale(const BlockIQ1_M& b, int s) { return 2 * ((iq1m_u16(b, s / 4) >> (3 * (s % 4))) & 7) + 1; }
inline int iq_value(const BlockIQ1_M& b, int e) {
    const int g = e / 8;
    const int nib = (b.qh[g / 2] >> (4 * (g % 2))) & 0x0F;
    const int idx = b.qs[g] | ((nib & 7) << 8);
    return 8 * grid_byte(kIQ1SGrid[idx], e % 8) + ((nib & 8) ? -1 : 1);
}

}  // namespace ls::qb
