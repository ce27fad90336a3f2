// mul_mat, stage 2, the subgroup variant (32-element blocks) for a few activation rows
// (decode steps): one subgroup per weight row. Lane i computes the exact integer sums (and the products d_w * d_a) of blocks i, i + S, ...
// (S = the subgroup's size), so the row is read by S lanes at once; then every lane walks the
// blocks in order, taking each block's values from the lane that computed them
// (subgroupShuffle), and runs the plain path's float chain: each output is the same bits.
// Used where the device supports subgroup shuffles in compute shaders (the host checks).
// variant: mul_mat_sg_q4_0 WTYPE=LS_TYPE_Q4_0
// variant: mul_mat_sg_q4_1 WTYPE=LS_TYPE_Q4_1
// variant: mul_mat_sg_q5_0 WTYPE=LS_TYPE_Q5_0
// variant: mul_mat_sg_q5_1 WTYPE=LS_TYPE_Q5_1
// variant: mul_mat_sg_q8_0 WTYPE=LS_TYPE_Q8_0
// variant: mul_mat_sg_iq4_nl WTYPE=LS_TYPE_IQ4_NL
// variant: mul_mat_sg_mxfp4 WTYPE=LS_TYPE_MXFP4
#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_shuffle : require
#include "shaders/common.glsl"
layout(local_size_x = 64) in;

layout(push_constant, std430) uniform Pc { PcMulMat p; } pc;
#include "shaders/mul_mat_q32.glsl"

const uint MSG = 4u;  // activation rows at most (the host uses this variant for M <= 4)
void main() {
    const uint S = gl_SubgroupSize, lane = gl_SubgroupInvocationID;
    // Rows per workgroup: the host dispatches N / R workgroups with R from the subgroup size
    // the device reports; the loop covers R rows whatever the subgroups really are.
    const uint R = max(1u, 64u / SUBGROUP_SIZE);
    const uint mc = min(MSG, pc.p.M);
    const uint nb = pc.p.K / 32u;
    int q[32];
    for (uint r = gl_SubgroupID; r < R; r += gl_NumSubgroups) {
        const uint n = (gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x) * R + r;
        if (n >= pc.p.N) break;  // uniform over the subgroup
        const addr_t w = addr_mad(pc.p.w, n, pc.p.w_nb1);
        float sum[MSG];
        for (uint m = 0u; m < MSG; ++m) sum[m] = 0.0;
        for (uint b0 = 0u; b0 < nb; b0 += S) {
            const uint b = b0 + lane;
            int sumi[MSG];
            float dd[MSG], mw[MSG], ma[MSG];
            for (uint m = 0u; m < MSG; ++m) { sumi[m] = 0; dd[m] = 0.0; mw[m] = 0.0; ma[m] = 0.0; }
            if (b < nb) {
                const addr_t wb = addr_mad(w, b, WB);
                wlevels(wb, q);
                const float dw = wd(wb);
                for (uint m = 0u; m < mc; ++m) {
                    const addr_t ab = addr_mad(addr_mad(pc.p.act, m, pc.p.act_nb1), b, AB);
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
            for (uint m = 0u; m < mc; ++m) F32(addr_mad(pc.p.dst, m * pc.p.N + n, 4u)).v[0] = sum[m];
    }
}
