// mul_mat_id: activation "row" m is pair p = t * k + j; its weight matrix is expert ids[p]
// and its activation row t * X + (X == 1 ? 0 : j). One pair per invocation; an id outside
// [0, E) gives NaN (ids are computed on the device: the host cannot check them first).
// variant: mul_mat_id_f32 WTYPE=LS_TYPE_F32
// variant: mul_mat_id_f16 WTYPE=LS_TYPE_F16
// variant: mul_mat_id_bf16 WTYPE=LS_TYPE_BF16
// variant: mul_mat_id_q4_0 WTYPE=LS_TYPE_Q4_0
// variant: mul_mat_id_q4_1 WTYPE=LS_TYPE_Q4_1
// variant: mul_mat_id_q5_0 WTYPE=LS_TYPE_Q5_0
// variant: mul_mat_id_q5_1 WTYPE=LS_TYPE_Q5_1
// variant: mul_mat_id_q8_0 WTYPE=LS_TYPE_Q8_0
// variant: mul_mat_id_q2_k WTYPE=LS_TYPE_Q2_K
// variant: mul_mat_id_q3_k WTYPE=LS_TYPE_Q3_K
// variant: mul_mat_id_q4_k WTYPE=LS_TYPE_Q4_K
// variant: mul_mat_id_q5_k WTYPE=LS_TYPE_Q5_K
// variant: mul_mat_id_q6_k WTYPE=LS_TYPE_Q6_K
// variant: mul_mat_id_iq4_nl WTYPE=LS_TYPE_IQ4_NL
// variant: mul_mat_id_iq4_xs WTYPE=LS_TYPE_IQ4_XS
// variant: mul_mat_id_mxfp4 WTYPE=LS_TYPE_MXFP4
// variant: mul_mat_id_tq1_0 WTYPE=LS_TYPE_TQ1_0
// variant: mul_mat_id_tq2_0 WTYPE=LS_TYPE_TQ2_0
// variant: mul_mat_id_iq2_xxs WTYPE=LS_TYPE_IQ2_XXS
// variant: mul_mat_id_iq2_xs WTYPE=LS_TYPE_IQ2_XS
// variant: mul_mat_id_iq2_s WTYPE=LS_TYPE_IQ2_S
// variant: mul_mat_id_iq3_xxs WTYPE=LS_TYPE_IQ3_XXS
// variant: mul_mat_id_iq3_s WTYPE=LS_TYPE_IQ3_S
// variant: mul_mat_id_iq1_s WTYPE=LS_TYPE_IQ1_S
// variant: mul_mat_id_iq1_m WTYPE=LS_TYPE_IQ1_M
#version 450
#extension GL_GOOGLE_include_directive : require
#include "shaders/common.glsl"
layout(local_size_x = 64) in;

layout(push_constant, std430) uniform Pc { PcMulMatId p; } pc;
const uint MT = 1u;
int expert_of(uint m) { return I32(pc.p.ids).v[m]; }
#define ACT_ROW(m) ((m) / pc.p.k * pc.p.X + (pc.p.X == 1u ? 0u : (m) % pc.p.k))
#define WROW(n, m) addr_mad(addr_mad(pc.p.w, uint(expert_of(m)), pc.p.w_nb2), n, pc.p.w_nb1)
#include "shaders/mul_mat_dot.glsl"

void main() {
#ifdef IQ_GRID
    iq_grid_load();  // the codebook, before any invocation returns
#endif
    const uint n = gl_GlobalInvocationID.x, m0 = gl_GlobalInvocationID.y * MT;
    if (n >= pc.p.N || m0 >= pc.p.M) return;
    if (expert_of(m0) < 0 || uint(expert_of(m0)) >= pc.p.E) {
        F32(addr_mad(pc.p.dst, m0 * pc.p.N + n, 4u)).v[0] = uintBitsToFloat(0x7FC00000u);
        return;
    }
    dot_rows(n, m0);
}
