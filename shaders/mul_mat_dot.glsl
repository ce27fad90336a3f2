// The dot of mul_mat and mul_mat_id (core/ref/mul_mat.cpp): dot_rows(n, m0) computes weight
// row n against activation rows m0 .. m0 + MT (fewer at the end): per output, an exact
// integer sum per block, then the reference's float chain over the blocks in order,
// sum = fma_rn(d_w * d_a, float(isum), sum) (K-quants with mins: the second chain,
// subtracted at the end; float weights: exact products summed in double). Each invocation
// owns whole outputs, so tiling never changes the bits.
// The including kernel defines pc, MT, ACT_ROW(m) (activation row of output row m) and
// WROW(n, m) (address of weight row n for output row m).

#if WTYPE == LS_TYPE_F32 || WTYPE == LS_TYPE_F16 || WTYPE == LS_TYPE_BF16
// Float weights: exact products summed in double, in element order.
void dot_rows(uint n, uint m0) {
    const uint mc = min(MT, pc.p.M - m0);
    const uint64_t w = WROW(n, m0);
    double acc[MT];
    for (uint m = 0u; m < MT; ++m) acc[m] = 0.0;
    for (uint i = 0u; i < pc.p.K; ++i) {
#if WTYPE == LS_TYPE_F32
        const double wv = double(F32(w).v[i]);
#elif WTYPE == LS_TYPE_F16
        const double wv = double(h2f(ld16(w, 2u * i)));
#else
        const double wv = double(bf2f(ld16(w, 2u * i)));
#endif
        for (uint m = 0u; m < mc; ++m) {
            const uint64_t a = pc.p.act + uint64_t(ACT_ROW(m0 + m)) * pc.p.act_nb1;
#if WTYPE == LS_TYPE_F16
            precise double prod = wv * double(h2f(ld16(a, 2u * i)));
#else
            precise double prod = wv * double(F32(a).v[i]);
#endif
            acc[m] = acc[m] + prod;
        }
    }
    for (uint m = 0u; m < mc; ++m) F32(pc.p.dst + (uint64_t(m0 + m) * pc.p.N + n) * 4u).v[0] = d2f(acc[m]);
}

#elif WTYPE == LS_TYPE_Q4_0 || WTYPE == LS_TYPE_Q4_1 || WTYPE == LS_TYPE_Q5_0 || WTYPE == LS_TYPE_Q5_1 || WTYPE == LS_TYPE_Q8_0
#include "shaders/mul_mat_q32.glsl"
void dot_rows(uint n, uint m0) {
    const uint mc = min(MT, pc.p.M - m0);
    const uint64_t w = WROW(n, m0);
    float sum[MT];
    for (uint m = 0u; m < MT; ++m) sum[m] = 0.0;
    int q[32];
    for (uint b = 0u; b < pc.p.K / 32u; ++b) {
        const uint64_t wb = w + uint64_t(b) * WB;
        wlevels(wb, q);
        const float dw = h2f(ldh(wb));
        for (uint m = 0u; m < mc; ++m) {
            const uint64_t ab = pc.p.act + uint64_t(ACT_ROW(m0 + m)) * pc.p.act_nb1 + uint64_t(b) * AB;
            uint aw[8];
            ldw8(ab + AQ, aw);
            int sumi = 0;  // exact: any order
            for (uint j = 0u; j < 32u; ++j) sumi += q[j] * sb(aw[j / 4u], j % 4u);
            precise float dd = dw * h2f(ldh(ab));
            sum[m] = fma_rn(dd, float(sumi), sum[m]);
#if WTYPE == LS_TYPE_Q4_1 || WTYPE == LS_TYPE_Q5_1
            sum[m] = fma_rn(h2f(ldh(wb + 2u)), h2f(ldh(ab + 2u)), sum[m]);
#endif
        }
    }
    for (uint m = 0u; m < mc; ++m) F32(pc.p.dst + (uint64_t(m0 + m) * pc.p.N + n) * 4u).v[0] = sum[m];
}

#else
#include "shaders/mul_mat_qk.glsl"
void dot_rows(uint n, uint m0) {
    const uint mc = min(MT, pc.p.M - m0);
    const uint64_t w = WROW(n, m0);
    float sum[MT], msum_f[MT];
    for (uint m = 0u; m < MT; ++m) { sum[m] = 0.0; msum_f[m] = 0.0; }
    int q[32];
    for (uint b = 0u; b < pc.p.K / 256u; ++b) {
        const uint64_t wb = w + uint64_t(b) * WB;
        int isum[MT], msum[MT];
        for (uint m = 0u; m < MT; ++m) { isum[m] = 0; msum[m] = 0; }
#if WTYPE == LS_TYPE_Q4_K || WTYPE == LS_TYPE_Q5_K || WTYPE == LS_TYPE_Q6_K
        block_isums(wb, pc.p.act + uint64_t(ACT_ROW(m0)) * pc.p.act_nb1 + uint64_t(b) * 292u, mc, isum, msum);
#else
        for (uint s = 0u; s < 256u / SUB; ++s) {
            for (uint t = 0u; t < SUB; ++t) q[t] = wlevel(wb, SUB * s + t);
            int sc, mn;
            wscale(wb, s, sc, mn);
            for (uint m = 0u; m < mc; ++m) {
                const uint64_t ab = pc.p.act + uint64_t(ACT_ROW(m0 + m)) * pc.p.act_nb1 + uint64_t(b) * 292u;
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
        const float dw = h2f(ld16(wb, D)), dmin = h2f(ld16(wb, DMIN));
        for (uint m = 0u; m < mc; ++m) {
            const uint64_t ab = pc.p.act + uint64_t(ACT_ROW(m0 + m)) * pc.p.act_nb1 + uint64_t(b) * 292u;
            const float da = F32(ab).v[0];
            precise float dd = da * dw;
            sum[m] = fma_rn(dd, float(isum[m]), sum[m]);
            if (HAS_MIN) {
                precise float dm = da * dmin;
                msum_f[m] = fma_rn(dm, float(msum[m]), msum_f[m]);
            }
        }
    }
    for (uint m = 0u; m < mc; ++m) {
        precise float r = HAS_MIN ? sum[m] - msum_f[m] : sum[m];
        F32(pc.p.dst + (uint64_t(m0 + m) * pc.p.N + n) * 4u).v[0] = r;
    }
}
#endif
