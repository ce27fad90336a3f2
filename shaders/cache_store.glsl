// A cache row's block b written from floats as set_rows writes it (core/ref/set_rows.cpp, the
// reference quantizers of core/quant/quant_legacy.cpp bit for bit): F32, F16 and BF16 one
// element a block (x[0]), Q8_0 and Q4_0 32 elements. set_rows.comp and head_rows.comp.
uint cache_block_elems(const uint type) { return (type == LS_TYPE_Q8_0 || type == LS_TYPE_Q4_0) ? 32u : 1u; }

void cache_store_block(const uint type, const addr_t dst, const uint b, const float x[32]) {
    if (type == LS_TYPE_F32) { F32(dst).v[b] = x[0]; return; }
    if (type == LS_TYPE_F16) { st16(dst, 2u * b, f2h(x[0])); return; }
    if (type == LS_TYPE_BF16) { st16(dst, 2u * b, f2bf(x[0])); return; }
    if (type == LS_TYPE_Q8_0) {
        // d = amax / 127, q = rne(x * (127 / amax))
        float amax = 0.0;
        for (uint j = 0u; j < 32u; ++j) amax = max(amax, abs(x[j]));
        const float d = canon_div(amax, 127.0);
        const float id = amax != 0.0 ? canon_div(127.0, amax) : 0.0;
        const addr_t blk = addr_mad(dst, b, 34u);
        st16(blk, 0u, f2h(d));
        for (uint j = 0u; j < 32u; ++j) {
            precise float v = x[j] * id;
            st8(blk, 2u + j, uint(int(roundEven(v))) & 0xFFu);
        }
        return;
    }
    // Q4_0: the element of largest magnitude (first one, sign kept) maps to -8.
    float amax = 0.0, mx = 0.0;
    for (uint j = 0u; j < 32u; ++j)
        if (abs(x[j]) > amax) { amax = abs(x[j]); mx = x[j]; }
    const float d = canon_div(mx, -8.0);
    const float id = d != 0.0 ? canon_div(1.0, d) : 0.0;
    const addr_t blk = addr_mad(dst, b, 18u);
    st16(blk, 0u, f2h(d));
    for (uint j = 0u; j < 16u; ++j) {
        precise float v0 = x[j] * id, v1 = x[j + 16u] * id;
        const int q0 = clamp(int(roundEven(v0)) + 8, 0, 15), q1 = clamp(int(roundEven(v1)) + 8, 0, 15);
        st8(blk, 2u + j, uint(q0) | (uint(q1) << 4));
    }
}
