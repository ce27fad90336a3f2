// mul_mat, stage 2, the subgroup variant (32-element blocks) for a few activation rows
// (decode steps): one subgroup per weight row. Lane i computes the exact integer sums (and the products d_w * d_a) of blocks i, i + S, ...
// (S = the subgroup's size), so the row is read by S lanes at once; then every lane walks the
// blocks in order, taking each block's values from the lane that computed them
// (subgroupShuffle), and runs the plain path's float chain: each output is the same bits.
// Used where the device supports subgroup shuffles in compute shaders (the host checks);
// ID: mul_mat_id's form (shaders/mul_mat_sg_rows.glsl).
// variant: mul_mat_sg_q4_0 WTYPE=LS_TYPE_Q4_0
// variant: mul_mat_sg_q4_1 WTYPE=LS_TYPE_Q4_1
// variant: mul_mat_sg_q5_0 WTYPE=LS_TYPE_Q5_0
// variant: mul_mat_sg_q5_1 WTYPE=LS_TYPE_Q5_1
// variant: mul_mat_sg_q8_0 WTYPE=LS_TYPE_Q8_0
// variant: mul_mat_sg_iq4_nl WTYPE=LS_TYPE_IQ4_NL
// variant: mul_mat_sg_mxfp4 WTYPE=LS_TYPE_MXFP4
// variant: mul_mat_id_sg_q4_0 WTYPE=LS_TYPE_Q4_0 ID=1
// variant: mul_mat_id_sg_q4_1 WTYPE=LS_TYPE_Q4_1 ID=1
// variant: mul_mat_id_sg_q5_0 WTYPE=LS_TYPE_Q5_0 ID=1
// variant: mul_mat_id_sg_q5_1 WTYPE=LS_TYPE_Q5_1 ID=1
// variant: mul_mat_id_sg_q8_0 WTYPE=LS_TYPE_Q8_0 ID=1
// variant: mul_mat_id_sg_iq4_nl WTYPE=LS_TYPE_IQ4_NL ID=1
// variant: mul_mat_id_sg_mxfp4 WTYPE=LS_TYPE_MXFP4 ID=1
#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_shuffle : require
#include "shaders/common.glsl"
layout(local_size_x = 64) in;

#include "shaders/mul_mat_sg_rows.glsl"
#include "shaders/mul_mat_q32.glsl"

void main() {
    const uint S = gl_SubgroupSize, lane = gl_SubgroupInvocationID;
    // Rows per workgroup: the host dispatches N / R workgroups with R from the subgroup size
    // the device reports; the loop covers R rows whatever the subgroups really are.
    const uint R = max(1u, 64u / SUBGROUP_SIZE);
    const SgRows rs = sg_rows();
    const uint mc = rs.mc;
    const uint nb = pc.p.K / 32u;
    int q[32];
    for (uint r = gl_SubgroupID; r < R; r += gl_NumSubgroups) {
        const uint n = rs.group * R + r;
        if (n >= pc.p.N) break;  // uniform over the subgroup
        if (rs.bad) {  // mul_mat_id: an expert id outside [0, E)
            if (lane == 0u) F32(addr_mad(pc.p.dst, rs.dst_row * pc.p.N + n, 4u)).v[0] = uintBitsToFloat(0x7FC00000u);
            continue;
        }
        const addr_t w = addr_mad(rs.w, n, pc.p.w_nb1);
        float sum[MT];
        for (uint m = 0u; m < MT; ++m) sum[m] = 0.0;
        for (uint b0 = 0u; b0 < nb; b0 += S) {
            const uint b = b0 + lane;
            int sumi[MT];
            float dd[MT], mw[MT], ma[MT];
            for (uint m = 0u; m < MT; ++m) { sumi[m] = 0; dd[m] = 0.0; mw[m] = 0.0; ma[m] = 0.0; }
            if (b < nb) {
                const addr_t wb = addr_mad(w, b, WB);
                wlevels(wb, q);
                const float dw = wd(wb);
                for (uint m = 0u; m < mc; ++m) {
                    const addr_t ab = addr_mad(addr_mad(rs.act, m, pc.p.act_nb1), b, AB);
                    uint aw[8];
                    ldw8a(addr_add(ab, AQ), aw);
                    int si = 0;  // exact: any order
                    for (uint j = 0u; j < 32u; ++j) si += q[j] * sb(aw[j / 4u], j % 4u);
                    sumi[m] = si;
                    precise float d = dw * h2f(ldh(ab));
                    dd[m] = d;
#if WTYPE == LS_TYPE_Q4_1 || WTYPE == LS_TYPE_Q5_1
                    mw[m] = h2f(ldh(addr_add(wb, 2u)));
                    ma[m] = h2f(ldh(addr_add(ab, 2u)));
#endif
                }
            }
            const uint cnt = min(S, nb - b0);
            for (uint j = 0u; j < cnt; ++j)
                for (uint m = 0u; m < mc; ++m) {
                    const int sj = subgroupShuffle(sumi[m], j);
                    const float dj = subgroupShuffle(dd[m], j);
                    precise float s = sum[m] + dj * float(sj);
#if WTYPE == LS_TYPE_Q4_1 || WTYPE == LS_TYPE_Q5_1
                    s = s + subgroupShuffle(mw[m], j) * subgroupShuffle(ma[m], j);
#endif
                    sum[m] = s;
                }
        }
        if (lane == 0u)
            for (uint m = 0u; m < mc; ++m) F32(addr_mad(pc.p.dst, (rs.dst_row + m) * pc.p.N + n, 4u)).v[0] = sum[m];
    }
}
