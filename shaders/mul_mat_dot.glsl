// The dot of mul_mat and mul_mat_id (core/ref/mul_mat.cpp): dot_rows(n, m0) computes weight
// row n against activation rows m0 .. m0 + MT (fewer at the end): per output, an exact
// integer sum per block, then the reference's float chain over the blocks in order,
// sum = sum + (d_w * d_a) * float(isum), a product rounded and a sum rounded (K-quants with
// mins: the second chain, subtracted at the end; grid i-quants: times 1 / den at the end;
// float weights: canon_dot). Each invocation
// owns whole outputs, so tiling never changes the bits.
// The including kernel defines pc, MT, ACT_ROW(m) (activation row of output row m) and
// WROW(n, m) (address of weight row n for output row m).

#if WTYPE == LS_TYPE_F32 || WTYPE == LS_TYPE_F16 || WTYPE == LS_TYPE_BF16
// Float weights: canon_dot, per output 32 partial sums (element i into partial i mod 32, in
// increasing i), then the fixed tree (core/quant/quant.cpp vec_dot_ref).
float wval(addr_t w, uint i) {
#if WTYPE == LS_TYPE_F32
    return F32(w).v[i];
#elif WTYPE == LS_TYPE_F16
    return h2f(ld16(w, 2u * i));
#else
    return bf2f(ld16(w, 2u * i));
#endif
}
void dot_rows(uint n, uint m0) {
    const uint mc = min(MT, pc.p.M - m0);
    const addr_t w = WROW(n, m0);
    for (uint m = 0u; m < mc; ++m) {
        const addr_t a = addr_mad(pc.p.act, ACT_ROW(m0 + m), pc.p.act_nb1);
        float part[32];
        for (uint l = 0u; l < 32u; ++l) part[l] = 0.0;
        for (uint i0 = 0u; i0 < pc.p.K; i0 += 32u)
            for (uint l = 0u; l < 32u; ++l) {
                const uint i = i0 + l;
                if (i < pc.p.K) {
#if WTYPE == LS_TYPE_F16
                    precise float s = part[l] + wval(w, i) * h2f(ld16(a, 2u * i));
#else
                    precise float s = part[l] + wval(w, i) * F32(a).v[i];
#endif
                    part[l] = s;
                }
            }
        F32(addr_mad(pc.p.dst, (m0 + m) * pc.p.N + n, 4u)).v[0] = canon_tree(part);
    }
}

#elif WTYPE == LS_TYPE_Q4_0 || WTYPE == LS_TYPE_Q4_1 || WTYPE == LS_TYPE_Q5_0 || WTYPE == LS_TYPE_Q5_1 || WTYPE == LS_TYPE_Q8_0 || WTYPE == LS_TYPE_IQ4_NL || WTYPE == LS_TYPE_MXFP4
#include "shaders/mul_mat_q32.glsl"
void dot_rows(uint n, uint m0) {
    const uint mc = min(MT, pc.p.M - m0);
    const addr_t w = WROW(n, m0);
    float sum[MT];
    for (uint m = 0u; m < MT; ++m) sum[m] = 0.0;
    int q[32];
    for (uint b = 0u; b < pc.p.K / 32u; ++b) {
        const addr_t wb = addr_mad(w, b, WB);
        wlevels(wb, q);
        const float dw = wd(wb);
        for (uint m = 0u; m < mc; ++m) {
            const addr_t ab = addr_mad(addr_mad(pc.p.act, ACT_ROW(m0 + m), pc.p.act_nb1), b, AB);
            uint aw[8];
            ldw8a(addr_add(ab, AQ), aw);
            int sumi = 0;  // exact: any order
            for (uint j = 0u; j < 32u; ++j) sumi += q[j] * sb(aw[j / 4u], j % 4u);
            precise float s = sum[m] + (dw * h2f(ldh(ab))) * float(sumi);
#if WTYPE == LS_TYPE_Q4_1 || WTYPE == LS_TYPE_Q5_1
            s = s + h2f(ldh(addr_add(wb, 2u))) * h2f(ldh(addr_add(ab, 2u)));
#endif
            sum[m] = s;
        }
    }
    for (uint m = 0u; m < mc; ++m) F32(addr_mad(pc.p.dst, (m0 + m) * pc.p.N + n, 4u)).v[0] = sum[m];
}

#else
#include "shaders/mul_mat_qk.glsl"
void dot_rows(uint n, uint m0) {
    const uint mc = min(MT, pc.p.M - m0);
    const addr_t w = WROW(n, m0);
    float sum[MT], msum_f[MT];
    for (uint m = 0u; m < MT; ++m) { sum[m] = 0.0; msum_f[m] = 0.0; }
    int q[32];
    for (uint b = 0u; b < pc.p.K / 256u; ++b) {
        const addr_t wb = addr_mad(w, b, WB);
        int isum[MT], msum[MT];
        for (uint m = 0u; m < MT; ++m) { isum[m] = 0; msum[m] = 0; }
#if QK_WORDS
        block_isums(wb, addr_mad(addr_mad(pc.p.act, ACT_ROW(m0), pc.p.act_nb1), b, 292u), mc, isum, msum);
#else
        for (uint s = 0u; s < 256u / SUB; ++s) {
            for (uint t = 0u; t < SUB; ++t) q[t] = wlevel(wb, SUB * s + t);
            int sc, mn;
            wscale(wb, s, sc, mn);
            for (uint m = 0u; m < mc; ++m) {
                const addr_t ab = addr_mad(addr_mad(pc.p.act, ACT_ROW(m0 + m), pc.p.act_nb1), b, 292u);
                int si = 0;
                for (uint t = 0u; t < SUB; ++t) si += q[t] * lds8(ab, 4u + SUB * s + t);
                isum[m] += sc * si;
                if (HAS_MIN) {
                    const int bs = SUB == 16u ? lds16(ab, 260u + 2u * s) : lds16(ab, 260u + 4u * s) + lds16(ab, 262u + 4u * s);
                    msum[m] += mn * bs;
                }
            }
        }
#endif
#ifdef IQ_GRID
        const float dw = grid_d(wb), dmin = 0.0;
#else
        const float dw = h2f(ld16(wb, D)), dmin = h2f(ld16(wb, DMIN));
#endif
        for (uint m = 0u; m < mc; ++m) {
            const addr_t ab = addr_mad(addr_mad(pc.p.act, ACT_ROW(m0 + m), pc.p.act_nb1), b, 292u);
            const float da = F32(ab).v[0];
            precise float s = sum[m] + (da * dw) * float(isum[m]);
            sum[m] = s;
            if (HAS_MIN) {
                precise float ms = msum_f[m] + (da * dmin) * float(msum[m]);
                msum_f[m] = ms;
            }
        }
    }
    for (uint m = 0u; m < mc; ++m) {
        precise float r = HAS_MIN ? sum[m] - msum_f[m] : sum[m];
#ifdef IQ_GRID
        if (DEN != 1u) r = r * (DEN == 8u ? 0.125 : 0.25);  // 1 / den, once at the end
#endif
        F32(addr_mad(pc.p.dst, (m0 + m) * pc.p.N + n, 4u)).v[0] = r;
    }
}
#endif
