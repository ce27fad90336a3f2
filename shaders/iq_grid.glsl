// The grid i-quants IQ2_XXS, IQ2_XS, IQ2_S, IQ3_XXS, IQ3_S, IQ1_S and IQ1_M (WTYPE): their
// codebook in shared memory and the integers a group of 8 elements and a sub-block scale
// stand for (core/quant/iq_access.h iq_value / iq_scale, layout for layout). Used by mul_mat
// and mul_mat_id (shaders/mul_mat_qk.glsl: the exact integer sums of a super-block) and by
// get_rows' per-type variants (grid_dequant8: the reference's float order).
//
// The codebooks are the words of core/quant/iq_grid_words.h, the one definition. The
// workgroup copies its type's table into shared memory (iq_grid_load), so each lookup is a
// shared load. The copy is one store of a constant array by the first invocation, its words
// computed by the compiler (constant expressions): drivers that keep a constant array indexed
// at run time in private memory (lavapipe) would build it for every invocation, and their
// compile time grows steeply with such an array (IQ1's 4096 words did not finish compiling;
// a 1024-word one took a minute) and with the number of stores (hence uvec4 stores). The IQ1
// and IQ2 tables, whose values take 3 levels, are packed into 2-bit codes, two 8-value entries
// a word: IQ2_S 512 words instead of 2048, IQ1 1024 instead of 4096 (4 KiB of shared memory
// instead of 16, all that Vulkan guarantees). The including kernel calls iq_grid_load() at the
// start of main, before any invocation returns: it holds a barrier.
#include "core/quant/iq_grid_words.h"
#define IQ_GRID 1

// WB block bytes, SUB elements per sub-block scale (kIqSub), DEN the scale's denominator
// (kIqDen), GRID_WORDS the shared words of the codebook.
#if WTYPE == LS_TYPE_IQ2_XXS
const uint WB = 66u, SUB = 32u, DEN = 8u, GRID_WORDS = 128u;
#define IQ_SRC_WORDS LS_IQ2XXS_GRID_WORDS
#define IQ_TABLE IQ_V16(0u), IQ_V16(16u)
#define IQ_SIGN_TABLE 1
#elif WTYPE == LS_TYPE_IQ2_XS
const uint WB = 74u, SUB = 16u, DEN = 8u, GRID_WORDS = 256u;
#define IQ_SRC_WORDS LS_IQ2XS_GRID_WORDS
#define IQ_TABLE IQ_V64(0u)
#define IQ_SIGN_TABLE 1
#elif WTYPE == LS_TYPE_IQ2_S
const uint WB = 82u, SUB = 16u, DEN = 8u, GRID_WORDS = 512u;
#define IQ_SRC_WORDS LS_IQ2S_GRID_WORDS
#define IQ_TABLE IQ_V64(0u), IQ_V64(64u)
#elif WTYPE == LS_TYPE_IQ3_XXS
const uint WB = 98u, SUB = 32u, DEN = 4u, GRID_WORDS = 256u;  // 4 values of 8 levels a word, as they are
#define IQ_SRC_WORDS LS_IQ3XXS_GRID_WORDS
#define IQ_TABLE IQ_V64(0u)
#define IQ_SIGN_TABLE 1
#elif WTYPE == LS_TYPE_IQ3_S
const uint WB = 110u, SUB = 32u, DEN = 1u, GRID_WORDS = 512u;
#define IQ_SRC_WORDS LS_IQ3S_GRID_WORDS
#define IQ_TABLE IQ_V64(0u), IQ_V64(64u)
#elif WTYPE == LS_TYPE_IQ1_S || WTYPE == LS_TYPE_IQ1_M
const uint WB = WTYPE == LS_TYPE_IQ1_S ? 50u : 56u, SUB = WTYPE == LS_TYPE_IQ1_S ? 32u : 16u, DEN = 8u, GRID_WORDS = 1024u;
#define IQ_SRC_WORDS LS_IQ1S_GRID_WORDS
#define IQ_TABLE IQ_V64(0u), IQ_V64(64u), IQ_V64(128u), IQ_V64(192u)
#endif
const bool IQ1 = WTYPE == LS_TYPE_IQ1_S || WTYPE == LS_TYPE_IQ1_M;

// Word i of the shared table, by the compiler. IQ3: the word as it is. IQ1, IQ2: byte b of
// an entry becomes its code (IQ2: 8, 25, 43 -> 0, 1, 2; IQ1: -1, 0, 1 -> 0, 1, 2), element j
// in bits 2j..; word i holds entries 2i (low half) and 2i + 1.
const uint IQ_SRC[] = uint[](IQ_SRC_WORDS);
#define IQ_CODE(b) (IQ1 ? (((b) + 1u) & 3u) : ((((b) & 0xFFu) - 8u) / 17u))
#define IQ_C(w, j) (IQ_CODE((w) >> (8u * (j))) << (2u * (j)))
#define IQ_C4(w) (IQ_C(w, 0u) | IQ_C(w, 1u) | IQ_C(w, 2u) | IQ_C(w, 3u))
#define IQ_ENTRY(e) (IQ_C4(IQ_SRC[2u * (e)]) | (IQ_C4(IQ_SRC[2u * (e) + 1u]) << 8))
#if WTYPE == LS_TYPE_IQ3_XXS || WTYPE == LS_TYPE_IQ3_S
#define IQ_WORD(i) IQ_SRC[i]
#else
#define IQ_WORD(i) (IQ_ENTRY(2u * (i)) | (IQ_ENTRY(2u * (i) + 1u) << 16))
#endif
#define IQ_V(i) uvec4(IQ_WORD(4u * (i)), IQ_WORD(4u * (i) + 1u), IQ_WORD(4u * (i) + 2u), IQ_WORD(4u * (i) + 3u))
#define IQ_V4(i) IQ_V(i), IQ_V((i) + 1u), IQ_V((i) + 2u), IQ_V((i) + 3u)
#define IQ_V16(i) IQ_V4(i), IQ_V4((i) + 4u), IQ_V4((i) + 8u), IQ_V4((i) + 12u)
#define IQ_V64(i) IQ_V16(i), IQ_V16((i) + 16u), IQ_V16((i) + 32u), IQ_V16((i) + 48u)

shared uvec4 s_grid[GRID_WORDS / 4u];
uint grid_word(uint i) { return s_grid[i >> 2][i & 3u]; }
#ifdef IQ_SIGN_TABLE
const uint IQ_SIGNS[] = uint[](LS_IQ_SIGNS_WORDS);
#define IQ_S(i) uvec4(IQ_SIGNS[4u * (i)], IQ_SIGNS[4u * (i) + 1u], IQ_SIGNS[4u * (i) + 2u], IQ_SIGNS[4u * (i) + 3u])
shared uvec4 s_signs[8];  // the 128 sign bytes (kIQSigns), 16 a vector
uint sign_byte(uint i) { return (s_signs[i >> 4][(i >> 2) & 3u] >> (8u * (i & 3u))) & 0xFFu; }
#endif

void iq_grid_load() {
    if (gl_LocalInvocationIndex == 0u) {
        s_grid = uvec4[GRID_WORDS / 4u](IQ_TABLE);
#ifdef IQ_SIGN_TABLE
        s_signs = uvec4[8](IQ_S(0u), IQ_S(1u), IQ_S(2u), IQ_S(3u), IQ_S(4u), IQ_S(5u), IQ_S(6u), IQ_S(7u));
#endif
    }
    barrier();
}

// The 2-bit codes of packed entry idx (IQ1, IQ2), element j in bits 2j..
uint codes8(uint idx) { return grid_word(idx >> 1) >> (16u * (idx & 1u)); }
int neg_if(int x, uint signs, uint j) { return ((signs >> j) & 1u) != 0u ? -x : x; }
// IQ2: entry idx's values (code c stands for 8 + 17c + c / 2: 8, 25, 43), negated where
// bit j of signs is set.
void iq2_8(uint idx, uint signs, out int v[8]) {
    const uint c = codes8(idx);
    [[unroll]] for (uint j = 0u; j < 8u; ++j) {
        const uint k = (c >> (2u * j)) & 3u;
        v[j] = neg_if(int(8u + 17u * k + (k >> 1)), signs, j);
    }
}
// IQ3: the bytes of the two 4-value entries w0, w1, negated where bit j of signs is set.
void iq3_8(uint w0, uint w1, uint signs, out int v[8]) {
    [[unroll]] for (uint j = 0u; j < 8u; ++j) v[j] = neg_if(sb(j < 4u ? w0 : w1, j & 3u), signs, j);
}
// IQ1: 8 * value + delta (the +-1/8 delta made integer) of entry idx.
void iq1_8(uint idx, int delta, out int v[8]) {
    const uint c = codes8(idx);
    [[unroll]] for (uint j = 0u; j < 8u; ++j) v[j] = 8 * (int((c >> (2u * j)) & 3u) - 1) + delta;
}

// The integer values of group g (elements 8g .. 8g + 7, g < 32) of block wb (iq_value).
// Blocks are 2-aligned (even sizes): 16-bit loads where a field is, ldw1 for a u32.
void grid_group(addr_t wb, uint g, out int v[8]) {
#if WTYPE == LS_TYPE_IQ2_XXS
    // sub-block g / 4: grid bytes qs[8ib..8ib+3], then a u32 with the 7-bit sign index of
    // its group l in bits 7l..
    const uint ib = g / 4u, idx = ld8(wb, 2u + 8u * ib + g % 4u);
    const uint aux = ldw1(addr_add(wb, 6u + 8u * ib));
    iq2_8(idx, sign_byte((aux >> (7u * (g % 4u))) & 127u), v);
#elif WTYPE == LS_TYPE_IQ2_XS
    const uint q = ldh(addr_add(wb, 2u + 2u * g));  // index in bits 0..8, sign index in 9..15
    const uint idx = q & 511u;
    iq2_8(idx, sign_byte(q >> 9), v);
#elif WTYPE == LS_TYPE_IQ2_S
    const uint idx = ld8(wb, 2u + g) | (((ld8(wb, 66u + g / 4u) >> (2u * (g % 4u))) & 3u) << 8);
    iq2_8(idx, ld8(wb, 34u + g), v);
#elif WTYPE == LS_TYPE_IQ3_XXS
    // two 4-value entries qs[2g], qs[2g + 1]; sub-block g / 4's u32 at qs[64 + 4ib]
    const uint ii = ldh(addr_add(wb, 2u + 2u * g));
    const uint aux = ldw1(addr_add(wb, 66u + 4u * (g / 4u)));
    iq3_8(grid_word(ii & 255u), grid_word(ii >> 8), sign_byte((aux >> (7u * (g % 4u))) & 127u), v);
#elif WTYPE == LS_TYPE_IQ3_S
    // entries k = 2g, 2g + 1: qs[k] with bit k % 8 of qh[k / 8] as bit 8
    const uint ii = ldh(addr_add(wb, 2u + 2u * g)), qh = ld8(wb, 66u + g / 4u) >> (2u * (g % 4u));
    iq3_8(grid_word((ii & 255u) | ((qh & 1u) << 8)), grid_word((ii >> 8) | (((qh >> 1) & 1u) << 8)), ld8(wb, 74u + g), v);
#elif WTYPE == LS_TYPE_IQ1_S
    const uint qh = ldh(addr_add(wb, 34u + 2u * (g / 4u)));  // bits 3(g%4).. index bits 8..10; bit 15 the delta's sign
    iq1_8(ld8(wb, 2u + g) | (((qh >> (3u * (g % 4u))) & 7u) << 8), (qh & 0x8000u) != 0u ? -1 : 1, v);
#elif WTYPE == LS_TYPE_IQ1_M
    const uint nib = (ld8(wb, 32u + g / 2u) >> (4u * (g % 2u))) & 15u;  // index bits 8..10, the delta's sign
    iq1_8(ld8(wb, g) | ((nib & 7u) << 8), (nib & 8u) != 0u ? -1 : 1, v);
#endif
}

// The scale ls of sub-block s (iq_scale): 2 * (its bits) + 1.
int grid_scale(addr_t wb, uint s) {
#if WTYPE == LS_TYPE_IQ2_XXS
    const uint b = ld8(wb, 9u + 8u * s) >> 4;  // bits 28..31 of the u32 at qs[8s + 4]
#elif WTYPE == LS_TYPE_IQ2_XS
    const uint b = (ld8(wb, 66u + s / 2u) >> (4u * (s % 2u))) & 15u;
#elif WTYPE == LS_TYPE_IQ2_S
    const uint b = (ld8(wb, 74u + s / 2u) >> (4u * (s % 2u))) & 15u;
#elif WTYPE == LS_TYPE_IQ3_XXS
    const uint b = ld8(wb, 69u + 4u * s) >> 4;  // bits 28..31 of the u32 at qs[64 + 4s]
#elif WTYPE == LS_TYPE_IQ3_S
    const uint b = (ld8(wb, 106u + s / 2u) >> (4u * (s % 2u))) & 15u;
#elif WTYPE == LS_TYPE_IQ1_S
    const uint b = (ld8(wb, 35u + 2u * s) >> 4) & 7u;  // bits 12..14 of qh[s]
#elif WTYPE == LS_TYPE_IQ1_M
    const uint b = (ldh(addr_add(wb, 48u + 2u * (s / 4u))) >> (3u * (s % 4u))) & 7u;
#endif
    return int(2u * b + 1u);
}

// The block scale d: the f16 at byte 0; IQ1_M's from the top nibbles of its four u16 scale
// words (iq1m_d).
float grid_d(addr_t wb) {
#if WTYPE == LS_TYPE_IQ1_M
    const uint lo = ldw1(addr_add(wb, 48u)), hi = ldw1(addr_add(wb, 52u));
    return h2f(((lo >> 12) & 0xFu) | ((lo >> 28) << 4) | (((hi >> 12) & 0xFu) << 8) | ((hi >> 28) << 12));
#else
    return h2f(ldh(wb));
#endif
}

// Elements 8 * grp .. 8 * grp + 7 of a row, dequantized in the gguf package's operation order
// (core/quant/quant_iq.cpp sub_scale, element): IQ2 d * (0.5 + s) * 0.25 and IQ3_XXS
// d * (0.5 + s) * 0.5 with s = (ls - 1) / 2, IQ3_S and IQ1 d * ls; then db * v (IQ1:
// db * (v / 8)).
void grid_dequant8(addr_t row, uint grp, out float y[8]) {
    const addr_t wb = addr_mad(row, grp / 32u, WB);
    const uint g = grp % 32u;
    const float d = grid_d(wb);
    const int ls = grid_scale(wb, 8u * g / SUB);
    precise float db;
    if (IQ1 || DEN == 1u) {
        db = d * float(ls);
    } else {
        const float half_ = 0.5 + float((ls - 1) / 2);  // exact
        db = d * half_ * (DEN == 8u ? 0.25 : 0.5);
    }
    int v[8];
    grid_group(wb, g, v);
    [[unroll]] for (uint j = 0u; j < 8u; ++j) {
        precise float x = IQ1 ? db * (float(v[j]) * 0.125) : db * float(v[j]);
        y[j] = x;
    }
}
