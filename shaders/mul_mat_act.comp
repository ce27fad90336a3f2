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
#elif ATYPE == LS_TYPE_Q8_0 || ATYPE == LS_TYPE_Q8_1
    float amax = 0.0;
    for (uint j = 0u; j < 32u; ++j) amax = max(amax, abs(F32(x).v[j]));
    const float d = canon_div(amax, 127.0);
    const float id = amax != 0.0 ? canon_div(127.0, amax) : 0.0;
    // 36-byte blocks, quants at 4 (Q8_0: d, two bytes of padding), so stage 2 reads them as
    // aligned words (backends/vulkan/ops/mul_mat_act.h act_row_bytes).
    const addr_t blk = addr_mad(arow, b, 36u);
    const uint qo = 4u;
    int sum = 0;
    for (uint j = 0u; j < 32u; ++j) {
        precise float v = F32(x).v[j] * id;
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
#else  // Q8_K
    float amax = 0.0;
    for (uint j = 0u; j < 256u; ++j) amax = max(amax, abs(F32(x).v[j]));
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
            precise float v = F32(x).v[16u * g16 + l] * iscale;
            const int q = int(roundEven(v));
            s += q;
            st8(blk, 4u + 16u * g16 + l, uint(q) & 0xFFu);
        }
        st16(blk, 260u + 2u * g16, uint(s) & 0xFFFFu);
    }
#endif
}
