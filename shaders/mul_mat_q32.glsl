// Weight blocks of 32 elements (Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, IQ4_NL, MXFP4; WTYPE) against
// activation blocks of Q8_0 (Q8_1 for the _1 types): block sizes, the integer levels and the
// scale of a weight block. Shared by the plain, mul_mat_id, shared-memory and subgroup dot
// kernels.
#if WTYPE == LS_TYPE_Q4_0 || WTYPE == LS_TYPE_IQ4_NL
const uint WB = 18u;
#elif WTYPE == LS_TYPE_MXFP4
const uint WB = 17u;  // blocks at any byte address
#elif WTYPE == LS_TYPE_Q4_1
const uint WB = 20u;
#elif WTYPE == LS_TYPE_Q5_0
const uint WB = 22u;
#elif WTYPE == LS_TYPE_Q5_1
const uint WB = 24u;
#else
const uint WB = 34u;
#endif
// Activation blocks (mul_mat_act.comp): 36 bytes, quants at 4 (Q8_1: d, s; Q8_0: d and two
// bytes of padding), so their words are 4-byte aligned.
const uint AB = 36u, AQ = 4u;

// The scale d_w of weight block wb (a float, as the reference's product takes it).
float wd(addr_t wb) {
#if WTYPE == LS_TYPE_MXFP4
    return mxfp4_scale(ld8(wb, 0u));
#else
    return h2f(ldh(wb));
#endif
}

// Integer levels of weight block wb.
void wlevels(addr_t wb, out int q[32]) {
#if WTYPE == LS_TYPE_MXFP4
    // 17-byte blocks are not even 2-aligned: byte loads.
    for (uint j = 0u; j < 16u; ++j) {
        const uint byte = ld8(wb, 1u + j);
        q[j] = mxfp4_level(byte & 15u);
        q[j + 16u] = mxfp4_level(byte >> 4);
    }
#elif WTYPE == LS_TYPE_IQ4_NL
    uint ww[4];
    ldw4(addr_add(wb, 2u), ww);
    for (uint j = 0u; j < 16u; ++j) {
        const uint byte = (ww[j / 4u] >> (8u * (j % 4u))) & 0xFFu;
        q[j] = iq4nl_level(byte & 15u);
        q[j + 16u] = iq4nl_level(byte >> 4);
    }
#elif WTYPE == LS_TYPE_Q8_0
    // Weight levels from 32-bit loads (blocks are 2-aligned; ldw* handle both cases).
    uint ww[8];
    ldw8(addr_add(wb, 2u), ww);
    for (uint j = 0u; j < 32u; ++j) q[j] = sb(ww[j / 4u], j % 4u);
#else
#if WTYPE == LS_TYPE_Q4_0 || WTYPE == LS_TYPE_Q5_0
    const uint qs = WTYPE == LS_TYPE_Q4_0 ? 2u : 6u;
#else
    const uint qs = WTYPE == LS_TYPE_Q4_1 ? 4u : 8u;
#endif
    uint ww[4];
#if WTYPE == LS_TYPE_Q4_1 || WTYPE == LS_TYPE_Q5_1
    ldw4a(addr_add(wb, qs), ww);  // 20- and 24-byte blocks: 4-byte aligned
#else
    ldw4(addr_add(wb, qs), ww);
#endif
    for (uint j = 0u; j < 16u; ++j) {
        const uint byte = (ww[j / 4u] >> (8u * (j % 4u))) & 0xFFu;
        q[j] = int(byte & 15u);
        q[j + 16u] = int(byte >> 4);
    }
#if WTYPE == LS_TYPE_Q5_0 || WTYPE == LS_TYPE_Q5_1
#if WTYPE == LS_TYPE_Q5_1
    const uint qh = ldw1a(addr_add(wb, 4u));
#else
    const uint qh = ldw1(addr_add(wb, 2u));
#endif
    for (uint j = 0u; j < 32u; ++j) q[j] |= int((qh >> j) & 1u) << 4;
#endif
#if WTYPE == LS_TYPE_Q4_0
    for (uint j = 0u; j < 32u; ++j) q[j] -= 8;
#elif WTYPE == LS_TYPE_Q5_0
    for (uint j = 0u; j < 32u; ++j) q[j] -= 16;
#endif
#endif
}
