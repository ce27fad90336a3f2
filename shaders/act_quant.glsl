// The activation quantizers of mul_mat's stage 1 (mul_mat_act.comp), exactly as quantize_row
// does (core/quant/quant_*.cpp): block b of an activation row into its act row. The includer
// defines ATYPE (LS_TYPE_Q8_0, Q8_1 or Q8_K) and ACT_IN(j), element j of the block, in terms
// of `src` (and its own globals): mul_mat_act.comp reads it from memory, the fused shaders
// (norm_chain.comp, glu.comp) compute it where their own output is computed, the same bits.
void act_quant_block(const addr_t src, const addr_t arow, const uint b) {
#if ATYPE == LS_TYPE_Q8_0 || ATYPE == LS_TYPE_Q8_1
    float amax = 0.0;
    for (uint j = 0u; j < 32u; ++j) amax = max(amax, abs(ACT_IN(j)));
    const float d = canon_div(amax, 127.0);
    const float id = amax != 0.0 ? canon_div(127.0, amax) : 0.0;
    // 36-byte blocks, quants at 4 (Q8_0: d, two bytes of padding), so stage 2 reads them as
    // aligned words (backends/vulkan/ops/mul_mat_act.h act_row_bytes).
    const addr_t blk = addr_mad(arow, b, 36u);
    const uint qo = 4u;
    int sum = 0;
    for (uint j = 0u; j < 32u; ++j) {
        precise float v = ACT_IN(j) * id;
        const int q = int(roundEven(v));
        sum += q;
        st8(blk, qo + j, uint(q) & 0xFFu);
    }
    st16(blk, 0u, f2h(d));
#if ATYPE == LS_TYPE_Q8_0
    st16(blk, 2u, 0u);
#else
    precise float s = d * float(sum);
    st16(blk, 2u, f2h(s));
#endif
#elif ATYPE == LS_TYPE_Q8_K
    float amax = 0.0;
    for (uint j = 0u; j < 256u; ++j) amax = max(amax, abs(ACT_IN(j)));
    const addr_t blk = addr_mad(arow, b, 292u);
    if (amax == 0.0) {
        for (uint j = 0u; j < 292u; ++j) st8(blk, j, 0u);
        return;
    }
    const float iscale = canon_div(127.0, amax);
    F32(blk).v[0] = canon_div(1.0, iscale);
    for (uint g16 = 0u; g16 < 16u; ++g16) {
        int s = 0;
        for (uint l = 0u; l < 16u; ++l) {
            precise float v = ACT_IN(16u * g16 + l) * iscale;
            const int q = int(roundEven(v));
            s += q;
            st8(blk, 4u + 16u * g16 + l, uint(q) & 0xFFu);
        }
        st16(blk, 260u + 2u * g16, uint(s) & 0xFFFFu);
    }
#endif
}
