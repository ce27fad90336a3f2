// mul_mat, stage 2, the subgroup variant for 256-element super-blocks (Q2_K .. Q6_K, IQ4_XS)
// for a few activation rows (decode steps): one subgroup per weight row. A super-block is 8
// groups of 32 elements (group_isums); G = min(8, S) lanes share one (fewer for the tests:
// pc.p.lanes), lane i taking groups i % G, i % G + G, ..., so a subgroup of S lanes reads S / G
// super-blocks at once: the row in wide loads, where the plain kernel has one invocation walk
// it. The lanes of a super-block add their exact integer sums (xor shuffles: integers, any
// order), and each forms the products d_a * d_w; then every lane runs the plain path's float
// chain over the blocks in order (mul_mat_dot.glsl), taking each block's values from its first
// lane (subgroupShuffle): each output is the same bits. The host uses it where mul_mat_sg_* runs;
// ID: mul_mat_id's form (shaders/mul_mat_sg_rows.glsl).
// variant: mul_mat_sgk_q2_k WTYPE=LS_TYPE_Q2_K
// variant: mul_mat_sgk_q3_k WTYPE=LS_TYPE_Q3_K
// variant: mul_mat_sgk_q4_k WTYPE=LS_TYPE_Q4_K
// variant: mul_mat_sgk_q5_k WTYPE=LS_TYPE_Q5_K
// variant: mul_mat_sgk_q6_k WTYPE=LS_TYPE_Q6_K
// variant: mul_mat_sgk_iq4_xs WTYPE=LS_TYPE_IQ4_XS
// variant: mul_mat_id_sgk_q2_k WTYPE=LS_TYPE_Q2_K ID=1
// variant: mul_mat_id_sgk_q3_k WTYPE=LS_TYPE_Q3_K ID=1
// variant: mul_mat_id_sgk_q4_k WTYPE=LS_TYPE_Q4_K ID=1
// variant: mul_mat_id_sgk_q5_k WTYPE=LS_TYPE_Q5_K ID=1
// variant: mul_mat_id_sgk_q6_k WTYPE=LS_TYPE_Q6_K ID=1
// variant: mul_mat_id_sgk_iq4_xs WTYPE=LS_TYPE_IQ4_XS ID=1
#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_shuffle : require
#include "shaders/common.glsl"
layout(local_size_x = 64) in;

#include "shaders/mul_mat_sg_rows.glsl"
#include "shaders/mul_mat_qk.glsl"

void main() {
    const uint S = gl_SubgroupSize, lane = gl_SubgroupInvocationID;
    const uint G = min(pc.p.lanes, S), BP = S / G;  // lanes per super-block, super-blocks per pass
    // Rows per workgroup: the host dispatches N / R workgroups with R from the subgroup size
    // the device reports; the loop covers R rows whatever the subgroups really are.
    const uint R = max(1u, 64u / SUBGROUP_SIZE);
    const SgRows rs = sg_rows();
    const uint mc = rs.mc;
    const uint nb = pc.p.K / 256u;
    for (uint r = gl_SubgroupID; r < R; r += gl_NumSubgroups) {
        const uint n = rs.group * R + r;
        if (n >= pc.p.N) break;  // uniform over the subgroup
        if (rs.bad) {  // mul_mat_id: an expert id outside [0, E)
            if (lane == 0u) F32(addr_mad(pc.p.dst, rs.dst_row * pc.p.N + n, 4u)).v[0] = uintBitsToFloat(0x7FC00000u);
            continue;
        }
        const addr_t w = addr_mad(rs.w, n, pc.p.w_nb1);
        float sum[MT], msum_f[MT];
        for (uint m = 0u; m < MT; ++m) { sum[m] = 0.0; msum_f[m] = 0.0; }
        for (uint b0 = 0u; b0 < nb; b0 += BP) {
            const uint b = b0 + lane / G;
            int isum[MT], msum[MT];
            float dd[MT], dm[MT];
            for (uint m = 0u; m < MT; ++m) { isum[m] = 0; msum[m] = 0; dd[m] = 0.0; dm[m] = 0.0; }
            if (b < nb) {
                const addr_t wb = addr_mad(w, b, WB), abase = addr_mad(rs.act, b, 292u);
                for (uint g = lane % G; g < 8u; g += G) group_isums(wb, abase, g, mc, isum, msum);
                const float dw = h2f(ld16(wb, D)), dmin = HAS_MIN ? h2f(ld16(wb, DMIN)) : 0.0;
                for (uint m = 0u; m < mc; ++m) {
                    const float da = F32(addr_mad(abase, m, pc.p.act_nb1)).v[0];
                    precise float d = da * dw;
                    precise float d2 = da * dmin;
                    dd[m] = d;
                    dm[m] = d2;
                }
            }
            // The super-block's G lanes add their sums: exact integers, any order.
            for (uint o = 1u; o < G; o <<= 1u)
                for (uint m = 0u; m < MT; ++m) {
                    isum[m] += subgroupShuffleXor(isum[m], o);
                    msum[m] += subgroupShuffleXor(msum[m], o);
                }
            const uint cnt = min(BP, nb - b0);
            for (uint j = 0u; j < cnt; ++j)
                for (uint m = 0u; m < mc; ++m) {
                    precise float s = sum[m] + subgroupShuffle(dd[m], G * j) * float(subgroupShuffle(isum[m], G * j));
                    sum[m] = s;
                    if (HAS_MIN) {
                        precise float ms = msum_f[m] + subgroupShuffle(dm[m], G * j) * float(subgroupShuffle(msum[m], G * j));
                        msum_f[m] = ms;
                    }
                }
        }
        if (lane == 0u)
            for (uint m = 0u; m < mc; ++m) {
                precise float v = HAS_MIN ? sum[m] - msum_f[m] : sum[m];
                F32(addr_mad(pc.p.dst, (rs.dst_row + m) * pc.p.N + n, 4u)).v[0] = v;
            }
    }
}
