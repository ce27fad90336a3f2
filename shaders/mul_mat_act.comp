// mul_mat and mul_mat_id, stage 1 (ATYPE = the weight's dot type): each activation row
// quantized exactly as quantize_row does (core/quant/quant_*.cpp), into a scratch row that
// stage 2 (mul_mat.comp, mul_mat_id.comp, mul_mat_sh.comp, mul_mat_sg.comp) reads.
// variant: mul_mat_act_q8_0 ATYPE=LS_TYPE_Q8_0
// variant: mul_mat_act_q8_1 ATYPE=LS_TYPE_Q8_1
// variant: mul_mat_act_q8_k ATYPE=LS_TYPE_Q8_K
// variant: mul_mat_act_f16 ATYPE=LS_TYPE_F16
// variant: mul_mat_act_f32 ATYPE=LS_TYPE_F32
#version 450
#extension GL_GOOGLE_include_directive : require
#include "shaders/common.glsl"
#define ACT_IN(j) F32(src).v[j]
#include "shaders/act_quant.glsl"
layout(local_size_x = 64) in;

layout(push_constant, std430) uniform Pc { PcMulMatAct p; } pc;

void main() {
#if ATYPE == LS_TYPE_Q8_0 || ATYPE == LS_TYPE_Q8_1
    const uint bsz = 32u;
#elif ATYPE == LS_TYPE_Q8_K
    const uint bsz = 256u;
#else
    const uint bsz = 1u;
#endif
    const uint nblk = pc.p.K / bsz;
    const uint g = gl_GlobalInvocationID.x + gl_GlobalInvocationID.y * gl_NumWorkGroups.x * 64u;
    if (g >= nblk * pc.p.rows) return;
    const uint r = g / nblk, b = g % nblk;
    const uint i1 = r % pc.p.ne1, i2 = (r / pc.p.ne1) % pc.p.ne2, i3 = r / (pc.p.ne1 * pc.p.ne2);
    const addr_t x = addr_mad(addr_mad(addr_mad(addr_mad(pc.p.x, i1, pc.p.nb1), i2, pc.p.nb2), i3, pc.p.nb3), b, bsz * 4u);
    const addr_t arow = addr_mad(pc.p.act, r, pc.p.act_nb1);
#if ATYPE == LS_TYPE_F32
    F32(arow).v[b] = F32(x).v[0];
#elif ATYPE == LS_TYPE_F16
    st16(arow, 2u * b, f2h(F32(x).v[0]));
#else
    act_quant_block(x, arow, b);
#endif
}
