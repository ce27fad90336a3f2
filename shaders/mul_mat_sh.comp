// mul_mat, stage 2, the shared-memory variant (32-element blocks): every invocation of a
// workgroup reads the same MT activation rows (it owns weight row n against rows
// m0..m0+MT), so the workgroup stages CB blocks of them in shared memory at a time (quant
// words, and the f16 scales already as floats: the same values), one barrier, then each
// invocation runs its own chain over the blocks in order, exactly as mul_mat.comp does.
// variant: mul_mat_sh_q4_0 WTYPE=LS_TYPE_Q4_0
// variant: mul_mat_sh_q4_1 WTYPE=LS_TYPE_Q4_1
// variant: mul_mat_sh_q5_0 WTYPE=LS_TYPE_Q5_0
// variant: mul_mat_sh_q5_1 WTYPE=LS_TYPE_Q5_1
// variant: mul_mat_sh_q8_0 WTYPE=LS_TYPE_Q8_0
// variant: mul_mat_sh_iq4_nl WTYPE=LS_TYPE_IQ4_NL
// variant: mul_mat_sh_mxfp4 WTYPE=LS_TYPE_MXFP4
#version 450
#extension GL_GOOGLE_include_directive : require
#include "shaders/common.glsl"
layout(local_size_x = 64) in;

layout(push_constant, std430) uniform Pc { PcMulMat p; } pc;
const uint MT = 8u;  // activation rows per workgroup row (the host dispatches M / MT)
#include "shaders/mul_mat_q32.glsl"

const uint CB = 16u;
shared uint s_q[MT * CB * 8u];
shared float s_d[MT * CB];
#if WTYPE == LS_TYPE_Q4_1 || WTYPE == LS_TYPE_Q5_1
shared float s_s[MT * CB];
#endif
void main() {
    const uint lid = gl_LocalInvocationID.x;
    const uint n = gl_GlobalInvocationID.x, m0 = gl_WorkGroupID.y * MT;
    if (m0 >= pc.p.M) return;  // uniform over the workgroup
    const uint mc = min(MT, pc.p.M - m0);
    const bool live = n < pc.p.N;
    const addr_t w = addr_mad(pc.p.w, n, pc.p.w_nb1);
    float sum[MT];
    for (uint m = 0u; m < MT; ++m) sum[m] = 0.0;
    int q[32];
    const uint nb = pc.p.K / 32u;
    for (uint b0 = 0u; b0 < nb; b0 += CB) {
        const uint cb = min(CB, nb - b0);
        barrier();  // the previous round's reads are done
        for (uint i = lid; i < mc * cb * 8u; i += gl_WorkGroupSize.x) {
            const uint m = i / (cb * 8u), r = i % (cb * 8u), bb = r / 8u, k = r % 8u;
            const addr_t ab = addr_mad(addr_mad(pc.p.act, m0 + m, pc.p.act_nb1), b0 + bb, AB);
            s_q[(m * CB + bb) * 8u + k] = ldw1a(addr_add(ab, AQ + 4u * k));
        }
        for (uint i = lid; i < mc * cb; i += gl_WorkGroupSize.x) {
            const uint m = i / cb, bb = i % cb;
            const addr_t ab = addr_mad(addr_mad(pc.p.act, m0 + m, pc.p.act_nb1), b0 + bb, AB);
            s_d[m * CB + bb] = h2f(ldh(ab));
#if WTYPE == LS_TYPE_Q4_1 || WTYPE == LS_TYPE_Q5_1
            s_s[m * CB + bb] = h2f(ldh(addr_add(ab, 2u)));
#endif
        }
        barrier();
        if (live) {
            for (uint bb = 0u; bb < cb; ++bb) {
                const addr_t wb = addr_mad(w, b0 + bb, WB);
                wlevels(wb, q);
                const float dw = wd(wb);
#if WTYPE == LS_TYPE_Q4_1 || WTYPE == LS_TYPE_Q5_1
                const float mw = h2f(ldh(addr_add(wb, 2u)));
#endif
                for (uint m = 0u; m < mc; ++m) {
                    const uint base = (m * CB + bb) * 8u;
                    uint aw[8];
                    for (uint k = 0u; k < 8u; ++k) aw[k] = s_q[base + k];
                    int sumi = 0;  // exact: any order
                    for (uint j = 0u; j < 32u; ++j) sumi += q[j] * sb(aw[j / 4u], j % 4u);
                    precise float s = sum[m] + (dw * s_d[m * CB + bb]) * float(sumi);
#if WTYPE == LS_TYPE_Q4_1 || WTYPE == LS_TYPE_Q5_1
                    s = s + mw * s_s[m * CB + bb];
#endif
                    sum[m] = s;
                }
            }
        }
    }
    if (live)
        for (uint m = 0u; m < mc; ++m) F32(addr_mad(pc.p.dst, (m0 + m) * pc.p.N + n, 4u)).v[0] = sum[m];
}
