// mul_mat, stage 2 (WTYPE = the weight type): dst[m * N + n] = dot(w row n, act row m),
// one invocation per weight row n and MT activation rows (shaders/mul_mat_dot.glsl).
// variant: mul_mat_f32 WTYPE=LS_TYPE_F32
// variant: mul_mat_f16 WTYPE=LS_TYPE_F16
// variant: mul_mat_bf16 WTYPE=LS_TYPE_BF16
// variant: mul_mat_q4_0 WTYPE=LS_TYPE_Q4_0
// variant: mul_mat_q4_1 WTYPE=LS_TYPE_Q4_1
// variant: mul_mat_q5_0 WTYPE=LS_TYPE_Q5_0
// variant: mul_mat_q5_1 WTYPE=LS_TYPE_Q5_1
// variant: mul_mat_q8_0 WTYPE=LS_TYPE_Q8_0
// variant: mul_mat_q2_k WTYPE=LS_TYPE_Q2_K
// variant: mul_mat_q3_k WTYPE=LS_TYPE_Q3_K
// variant: mul_mat_q4_k WTYPE=LS_TYPE_Q4_K
// variant: mul_mat_q5_k WTYPE=LS_TYPE_Q5_K
// variant: mul_mat_q6_k WTYPE=LS_TYPE_Q6_K
// variant: mul_mat_iq4_nl WTYPE=LS_TYPE_IQ4_NL
// variant: mul_mat_iq4_xs WTYPE=LS_TYPE_IQ4_XS
// variant: mul_mat_mxfp4 WTYPE=LS_TYPE_MXFP4
// variant: mul_mat_tq1_0 WTYPE=LS_TYPE_TQ1_0
// variant: mul_mat_tq2_0 WTYPE=LS_TYPE_TQ2_0
// variant: mul_mat_iq2_xxs WTYPE=LS_TYPE_IQ2_XXS
// variant: mul_mat_iq2_xs WTYPE=LS_TYPE_IQ2_XS
// variant: mul_mat_iq2_s WTYPE=LS_TYPE_IQ2_S
// variant: mul_mat_iq3_xxs WTYPE=LS_TYPE_IQ3_XXS
// variant: mul_mat_iq3_s WTYPE=LS_TYPE_IQ3_S
// variant: mul_mat_iq1_s WTYPE=LS_TYPE_IQ1_S
// variant: mul_mat_iq1_m WTYPE=LS_TYPE_IQ1_M
#version 450
#extension GL_GOOGLE_include_directive : require
#include "shaders/common.glsl"
layout(local_size_x = 64) in;

layout(push_constant, std430) uniform Pc { PcMulMat p; } pc;
const uint MT = 8u;  // activation rows per invocation (the host dispatches M / MT)
#define ACT_ROW(m) (m)
#define WROW(n, m) addr_mad(pc.p.w, n, pc.p.w_nb1)
#include "shaders/mul_mat_dot.glsl"

void main() {
#ifdef IQ_GRID
    iq_grid_load();  // the codebook, before any invocation returns
#endif
    const uint n = gl_GlobalInvocationID.x, m0 = gl_GlobalInvocationID.y * MT;
    if (n >= pc.p.N || m0 >= pc.p.M) return;
    dot_rows(n, m0);
}
