// Weights of 256-element super-blocks against Q8_K activations: the K-quants (Q2_K .. Q6_K),
// IQ4_XS, the ternary TQ1_0 / TQ2_0 and the grid i-quants (WTYPE): block layout, levels,
// sub-block scales and the exact integer sums of a super-block. Needs pc (PcMulMat or
// PcMulMatId) and MT from the including kernel; for the grid i-quants its main calls
// iq_grid_load() first (shaders/iq_grid.glsl).
// WB block bytes, SUB sub-block size, D / DMIN byte offsets of the f16 scales.
#if WTYPE == LS_TYPE_IQ2_XXS || WTYPE == LS_TYPE_IQ2_XS || WTYPE == LS_TYPE_IQ2_S || WTYPE == LS_TYPE_IQ3_XXS || \
    WTYPE == LS_TYPE_IQ3_S || WTYPE == LS_TYPE_IQ1_S || WTYPE == LS_TYPE_IQ1_M
#include "shaders/iq_grid.glsl"  // WB, SUB, DEN; d from grid_d (IQ1_M's is not at a fixed offset)
const uint D = 0u, DMIN = 0u;
#elif WTYPE == LS_TYPE_IQ4_XS
const uint WB = 136u, SUB = 32u, D = 0u, DMIN = 0u;
#elif WTYPE == LS_TYPE_TQ1_0
const uint WB = 54u, SUB = 256u, D = 52u, DMIN = 0u;
#elif WTYPE == LS_TYPE_TQ2_0
const uint WB = 66u, SUB = 256u, D = 64u, DMIN = 0u;
#elif WTYPE == LS_TYPE_Q2_K
const uint WB = 84u, SUB = 16u, D = 80u, DMIN = 82u;
#elif WTYPE == LS_TYPE_Q3_K
const uint WB = 110u, SUB = 16u, D = 108u, DMIN = 0u;
#elif WTYPE == LS_TYPE_Q4_K
const uint WB = 144u, SUB = 32u, D = 0u, DMIN = 2u;
#elif WTYPE == LS_TYPE_Q5_K
const uint WB = 176u, SUB = 32u, D = 0u, DMIN = 2u;
#else
const uint WB = 210u, SUB = 16u, D = 208u, DMIN = 0u;
#endif
const bool HAS_MIN = WTYPE == LS_TYPE_Q2_K || WTYPE == LS_TYPE_Q4_K || WTYPE == LS_TYPE_Q5_K;
// The types whose super-block sums come from 32-bit loads (block_isums below); Q2_K and Q3_K
// take them element by element (wlevel, wscale).
#define QK_WORDS (WTYPE != LS_TYPE_Q2_K && WTYPE != LS_TYPE_Q3_K)

#if WTYPE == LS_TYPE_Q2_K || WTYPE == LS_TYPE_Q3_K || WTYPE == LS_TYPE_Q4_K || WTYPE == LS_TYPE_Q5_K || WTYPE == LS_TYPE_Q6_K
// Integer level of element e of a super-block (the reference's *_value helpers).
int wlevel(addr_t wb, uint e) {
#if WTYPE == LS_TYPE_Q2_K
    const uint n = e / 128u, j = (e % 128u) / 32u, l = e % 32u;
    return int((ld8(wb, 16u + 32u * n + l) >> (2u * j)) & 3u);
#elif WTYPE == LS_TYPE_Q3_K
    const uint n = e / 128u, j = (e % 128u) / 32u, l = e % 32u;
    const int lo = int((ld8(wb, 32u + 32u * n + l) >> (2u * j)) & 3u);
    const int hi = int((ld8(wb, l) >> (4u * n + j)) & 1u);
    return lo - (hi != 0 ? 0 : 4);
#elif WTYPE == LS_TYPE_Q4_K || WTYPE == LS_TYPE_Q5_K
    const uint c = e / 64u, h = (e % 64u) / 32u, l = e % 32u;
    int v = int((ld8(wb, (WTYPE == LS_TYPE_Q4_K ? 16u : 48u) + 32u * c + l) >> (4u * h)) & 15u);
#if WTYPE == LS_TYPE_Q5_K
    v |= int((ld8(wb, 16u + (e % 32u)) >> (e / 32u)) & 1u) << 4;
#endif
    return v;
#else
    const uint n = e / 128u, k = (e % 128u) / 32u, l = e % 32u;
    const uint lo = (ld8(wb, 64u * n + 32u * (k % 2u) + l) >> (4u * (k / 2u))) & 15u;
    const uint hi = (ld8(wb, 128u + 32u * n + l) >> (2u * k)) & 3u;
    return int(lo | (hi << 4)) - 32;
#endif
}

// Scale (and min) of sub-block s.
void wscale(addr_t wb, uint s, out int sc, out int mn) {
#if WTYPE == LS_TYPE_Q2_K
    const uint v = ld8(wb, s);
    sc = int(v & 15u);
    mn = int(v >> 4);
#elif WTYPE == LS_TYPE_Q3_K
    const int lo = int(s < 8u ? (ld8(wb, 96u + s) & 15u) : (ld8(wb, 96u + s - 8u) >> 4));
    const int hi = int((ld8(wb, 104u + (s & 3u)) >> (2u * (s >> 2u))) & 3u);
    sc = (lo | (hi << 4)) - 32;
    mn = 0;
#elif WTYPE == LS_TYPE_Q4_K || WTYPE == LS_TYPE_Q5_K
    if (s < 4u) {
        sc = int(ld8(wb, 4u + s) & 63u);
        mn = int(ld8(wb, 8u + s) & 63u);
    } else {
        sc = int((ld8(wb, 8u + s) & 15u) | ((ld8(wb, s) >> 6) << 4));
        mn = int((ld8(wb, 8u + s) >> 4) | ((ld8(wb, 4u + s) >> 6) << 4));
    }
#else
    sc = lds8(wb, 192u + s);
    mn = 0;
#endif
}

#endif

#if WTYPE == LS_TYPE_Q2_K || WTYPE == LS_TYPE_Q3_K
// Group g of a Q2_K / Q3_K super-block (its sub-blocks of 16, 2g and 2g + 1) as group_isums
// below, element by element as the plain kernels take these two (wlevel, wscale).
void group_isums(addr_t wb, addr_t abase, uint g, uint mc, inout int isum[MT], inout int msum[MT]) {
    for (uint s = 2u * g; s < 2u * g + 2u; ++s) {
        int q[16];
        for (uint t = 0u; t < 16u; ++t) q[t] = wlevel(wb, 16u * s + t);
        int sc, mn;
        wscale(wb, s, sc, mn);
        for (uint m = 0u; m < mc; ++m) {
            const addr_t ab = addr_mad(abase, m, pc.p.act_nb1);
            int si = 0;
            for (uint t = 0u; t < 16u; ++t) si += q[t] * lds8(ab, 4u + 16u * s + t);
            isum[m] += sc * si;
            if (HAS_MIN) msum[m] += mn * lds16(ab, 260u + 2u * s);
        }
    }
}
#endif

#if QK_WORDS
// Quants a[0..n) of activation rows abase + m * act_nb1 from byte `off` of their blocks
// (4-byte aligned) against levels q[0..n) (n = 4, 16 or 32), added to isum[m] times sc.
void act_sums(addr_t abase, uint off, uint mc, uint n, int q[32], int sc, inout int isum[MT]) {
    for (uint m = 0u; m < mc; ++m) {
        const addr_t ab = addr_add(addr_mad(abase, m, pc.p.act_nb1), off);
        int si = 0;
        for (uint k = 0u; k < n / 4u; ++k) {
            const uint aw = ldw1a(addr_add(ab, 4u * k));
            for (uint l = 0u; l < 4u; ++l) si += q[4u * k + l] * sb(aw, l);
        }
        isum[m] += sc * si;
    }
}

#if WTYPE == LS_TYPE_Q4_K || WTYPE == LS_TYPE_Q5_K || WTYPE == LS_TYPE_Q6_K || WTYPE == LS_TYPE_IQ4_XS
// Integer sums of group g of a super-block (its elements 32g .. 32g + 31, one scale of 32 or
// two of 16) against activation rows abase + m * act_nb1, m < mc: added to isum[m], and the
// mins' sums to msum[m]. Exact integers, so a super-block's groups may be added in any order:
// the plain kernels walk them, the subgroup kernel (mul_mat_sgk.comp) gives each to a lane.
void group_isums(addr_t wb, addr_t abase, uint g, uint mc, inout int isum[MT], inout int msum[MT]) {
    int q[32];
#if WTYPE == LS_TYPE_IQ4_XS
    // 136-byte blocks: 4-byte aligned. Word 0: d, scales_h; word 1: scales_l.
    const uint sh = ldw1a(wb) >> 16, sl = ldw1a(addr_add(wb, 4u));
    uint qw[4];
    ldw4a(addr_add(wb, 8u + 16u * g), qw);
    for (uint j = 0u; j < 16u; ++j) {
        const uint byte = (qw[j / 4u] >> (8u * (j % 4u))) & 0xFFu;
        q[j] = iq4nl_level(byte & 15u);
        q[j + 16u] = iq4nl_level(byte >> 4);
    }
    const int sc = int(((sl >> (4u * g)) & 15u) | (((sh >> (2u * g)) & 3u) << 4)) - 32;  // iq4xs_scale
    act_sums(abase, 4u + 32u * g, mc, 32u, q, sc, isum);
#elif WTYPE == LS_TYPE_Q6_K
    // Group g = 4 hn + k: elements 128 hn + 32 k + l; low nibbles in ql[64 hn + 32 (k % 2) + l]
    // (bits 4 (k / 2)..), high bits in qh[32 hn + l] (bits 2k..); scales 8 hn + 2k and the next.
    const uint hn = g / 4u, k = g % 4u;
    uint qlw[8], qhw[8], scw[4];
    ldw8(addr_add(wb, 64u * hn + 32u * (k % 2u)), qlw);
    ldw8(addr_add(wb, 128u + 32u * hn), qhw);
    ldw4(addr_add(wb, 192u), scw);
    for (uint l = 0u; l < 32u; ++l) {
        const uint lo = (qlw[l / 4u] >> (8u * (l % 4u) + 4u * (k / 2u))) & 15u;
        const uint hi = (qhw[l / 4u] >> (8u * (l % 4u) + 2u * k)) & 3u;
        q[l] = int(lo | (hi << 4)) - 32;
    }
    const uint s0 = 8u * hn + 2u * k;
    const int sc0 = sb(scw[s0 / 4u], s0 % 4u), sc1 = sb(scw[(s0 + 1u) / 4u], (s0 + 1u) % 4u);
    for (uint m = 0u; m < mc; ++m) {
        uint aw[8];
        ldw8a(addr_add(addr_mad(abase, m, pc.p.act_nb1), 4u + 32u * g), aw);
        int si0 = 0, si1 = 0;
        for (uint l = 0u; l < 16u; ++l) si0 += q[l] * sb(aw[l / 4u], l % 4u);
        for (uint l = 16u; l < 32u; ++l) si1 += q[l] * sb(aw[l / 4u], l % 4u);
        isum[m] += sc0 * si0 + sc1 * si1;
    }
#else
    // Q4_K, Q5_K: group g is sub-block s = g, nibble h = g % 2 of qs[32 (g / 2) + l]; 144- and
    // 176-byte blocks are 4-byte aligned.
    const uint s = g, c = g / 2u, h = g % 2u;
    uint scw[3];
    for (uint i = 0u; i < 3u; ++i) scw[i] = ldw1a(addr_add(wb, 4u + 4u * i));
    uint qw[8];
    ldw8a(addr_add(wb, (WTYPE == LS_TYPE_Q4_K ? 16u : 48u) + 32u * c), qw);
#if WTYPE == LS_TYPE_Q5_K
    uint qhw[8];
    ldw8a(addr_add(wb, 16u), qhw);
#endif
    for (uint l = 0u; l < 32u; ++l) {
        q[l] = int((qw[l / 4u] >> (8u * (l % 4u) + 4u * h)) & 15u);
#if WTYPE == LS_TYPE_Q5_K
        q[l] |= int((qhw[l / 4u] >> (8u * (l % 4u) + s)) & 1u) << 4;
#endif
    }
    // scales (core/quant/quant_k.cpp get_scale_min_k4), bytes of scw
#define SCB(k) ((scw[(k) / 4u] >> (8u * ((k) % 4u))) & 0xFFu)
    int sc, mn;
    if (s < 4u) {
        sc = int(SCB(s) & 63u);
        mn = int(SCB(s + 4u) & 63u);
    } else {
        sc = int((SCB(s + 4u) & 15u) | ((SCB(s - 4u) >> 6) << 4));
        mn = int((SCB(s + 4u) >> 4) | ((SCB(s) >> 6) << 4));
    }
#undef SCB
    for (uint m = 0u; m < mc; ++m) {
        const addr_t ab = addr_mad(abase, m, pc.p.act_nb1);
        uint aw[8];
        ldw8a(addr_add(ab, 4u + 32u * s), aw);
        int si = 0;
        for (uint l = 0u; l < 32u; ++l) si += q[l] * sb(aw[l / 4u], l % 4u);
        isum[m] += sc * si;
        const uint bw = ldw1a(addr_add(ab, 260u + 4u * s));
        msum[m] += mn * ((int(bw << 16) >> 16) + (int(bw) >> 16));
    }
#endif
}
#endif

// Integer sums of one super-block from 32-bit loads (exact, so their order is free).
void block_isums(addr_t wb, addr_t abase, uint mc, inout int isum[MT], inout int msum[MT]) {
    int q[32];
#ifdef IQ_GRID
    // 32 elements at a time: 4 groups of 8 values from the codebook in shared memory, one
    // sub-block scale (SUB 32) or two (SUB 16), sum = sc0 * (first 16) + sc1 * (last 16).
    for (uint c = 0u; c < 8u; ++c) {
        [[unroll]] for (uint l = 0u; l < 4u; ++l) {
            int v[8];
            grid_group(wb, 4u * c + l, v);
            [[unroll]] for (uint j = 0u; j < 8u; ++j) q[8u * l + j] = v[j];
        }
        const int sc0 = grid_scale(wb, SUB == 16u ? 2u * c : c), sc1 = SUB == 16u ? grid_scale(wb, 2u * c + 1u) : sc0;
        for (uint m = 0u; m < mc; ++m) {
            uint aw[8];
            ldw8a(addr_add(addr_mad(abase, m, pc.p.act_nb1), 4u + 32u * c), aw);
            int si0 = 0, si1 = 0;
            [[unroll]] for (uint l = 0u; l < 16u; ++l) si0 += q[l] * sb(aw[l / 4u], l % 4u);
            [[unroll]] for (uint l = 16u; l < 32u; ++l) si1 += q[l] * sb(aw[l / 4u], l % 4u);
            isum[m] += sc0 * si0 + sc1 * si1;
        }
    }
#elif WTYPE == LS_TYPE_TQ1_0
    // 54-byte blocks: 2-aligned. Digit n of qs[0..32) is elements 32n.., of qs[32..48)
    // elements 160 + 16n.., of qh elements 240 + 4n.. (tq1_value).
    uint qw[8], hw[4];
    ldw8(wb, qw);
    ldw4(addr_add(wb, 32u), hw);
    const uint hq = ldw1(addr_add(wb, 48u));
    uint p = 1u;
    for (uint n = 0u; n < 5u; ++n, p *= 3u) {
        for (uint l = 0u; l < 32u; ++l) q[l] = tq1_digit((qw[l / 4u] >> (8u * (l % 4u))) & 0xFFu, p);
        act_sums(abase, 4u + 32u * n, mc, 32u, q, 1, isum);
        for (uint l = 0u; l < 16u; ++l) q[l] = tq1_digit((hw[l / 4u] >> (8u * (l % 4u))) & 0xFFu, p);
        act_sums(abase, 4u + 160u + 16u * n, mc, 16u, q, 1, isum);
        if (n < 4u) {
            for (uint l = 0u; l < 4u; ++l) q[l] = tq1_digit((hq >> (8u * l)) & 0xFFu, p);
            act_sums(abase, 4u + 240u + 4u * n, mc, 4u, q, 1, isum);
        }
    }
#elif WTYPE == LS_TYPE_TQ2_0
    // 66-byte blocks: 2-aligned. Element 128n + 32j + l: bits 2j.. of qs[32n + l] (tq2_value).
    for (uint n = 0u; n < 2u; ++n) {
        uint qw[8];
        ldw8(addr_add(wb, 32u * n), qw);
        for (uint j = 0u; j < 4u; ++j) {
            for (uint l = 0u; l < 32u; ++l) q[l] = int((qw[l / 4u] >> (8u * (l % 4u) + 2u * j)) & 3u) - 1;
            act_sums(abase, 4u + 128u * n + 32u * j, mc, 32u, q, 1, isum);
        }
    }
#else
    // Q4_K, Q5_K, Q6_K, IQ4_XS: its 8 groups of 32 elements (group_isums)
    for (uint g = 0u; g < 8u; ++g) group_isums(wb, abase, g, mc, isum, msum);
#endif
}
#endif
