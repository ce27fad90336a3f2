// attention, the fold pass of the split form (attention.comp with split != 0): one workgroup
// per (head, query) folds the query's block partials (m_b, l_b, o_b) in increasing block
// order exactly as attn_fold (core/rules/attention_rule.h), the first block's partial as the
// running state, then the head's sink logit when there are sinks (attn_fold_sink), then
// out[i] = canon_div(o[i], l). Invocation l owns elements l, l + 64, ...;
// m and l are folded identically by every invocation.
// The _q8_* variants also quantize the head's outputs for the mul_mat that reads them (the
// output projection, backends/vulkan/fused.cpp): its Dv / block blocks from shared memory, one
// invocation a block, as act_quant.glsl does for mul_mat_act.comp, so the quantizer's
// dispatch and a barrier of each layer's decode step go.
// variant: attention_fold ATYPE=0
// variant: attention_fold_q8_0 ATYPE=LS_TYPE_Q8_0
// variant: attention_fold_q8_1 ATYPE=LS_TYPE_Q8_1
// variant: attention_fold_q8_k ATYPE=LS_TYPE_Q8_K
#version 450
#extension GL_GOOGLE_include_directive : require
#include "shaders/common.glsl"
layout(local_size_x = 64) in;
layout(push_constant, std430) uniform Pc { PcAttnFold p; } pc;

const uint NV = 8u;  // Dv <= 512 (supports_attention)

#if ATYPE != 0
#if ATYPE == LS_TYPE_Q8_K
#define ACT_BLOCK 256u
#else
#define ACT_BLOCK 32u
#endif
shared float s_o[64u * NV];
uint g_block0;  // the block's first element in s_o
#define ACT_IN(j) s_o[g_block0 + (j)]
#include "shaders/act_quant.glsl"
#endif

void main() {
    const uint l = gl_LocalInvocationID.x;
    const uint H = pc.p.H, Dv = pc.p.Dv;
    const uint h = gl_WorkGroupID.x, t = gl_WorkGroupID.y;
    const int W = pc.p.window;
    const int pt = I32(pc.p.pos).v[t];
    const int k0 = attn_first(pc.p.pos, t, pc.p.T, pt, W);
    const uint nb = uint(pt / 64 - k0 / 64 + 1);
    const addr_t base = addr_mad(pc.p.part, (t * H + h) * pc.p.nblk, (Dv + 2u) * 4u);
    float m = F32(base).v[0], lsum = F32(base).v[1];
    float o[NV];
    for (uint c = 0u; c < NV; ++c) o[c] = l + 64u * c < Dv ? F32(base).v[2u + l + 64u * c] : 0.0;
    for (uint b = 1u; b < nb; ++b) {
        const addr_t pb = addr_mad(base, b, (Dv + 2u) * 4u);
        const float mb = F32(pb).v[0], lb = F32(pb).v[1];
        const float mn = canon_fmax(m, mb);
        precise float da = m - mn, dc = mb - mn;
        const float a = det_exp(da), cc = det_exp(dc);
        precise float nl = lsum * a + lb * cc;
        lsum = nl;
        for (uint c = 0u; c < NV; ++c) {
            if (l + 64u * c >= Dv) break;
            precise float no = o[c] * a + F32(pb).v[2u + l + 64u * c] * cc;
            o[c] = no;
        }
        m = mn;
    }
    if ((pc.p.sinks.x | pc.p.sinks.y) != 0u) {  // attn_fold_sink: the head's sink logit
        const float sk = F32(pc.p.sinks).v[h];
        const float mn = canon_fmax(m, sk);
        precise float da = m - mn, dc = sk - mn;
        const float a = det_exp(da), cc = det_exp(dc);
        precise float nl = lsum * a + cc;
        lsum = nl;
        for (uint c = 0u; c < NV; ++c) {
            precise float no = o[c] * a;
            o[c] = no;
        }
    }
    const addr_t outp = addr_mad(pc.p.dst, t * H + h, Dv * 4u);
    for (uint c = 0u; c < NV; ++c)
        if (l + 64u * c < Dv) {
            const float y = canon_div(o[c], lsum);
            F32(outp).v[l + 64u * c] = y;
#if ATYPE != 0
            s_o[l + 64u * c] = y;
#endif
        }
#if ATYPE != 0
    barrier();
    const uint per_head = Dv / ACT_BLOCK;  // Dv a whole number of blocks (fused.cpp)
    if (l < per_head) {
        g_block0 = l * ACT_BLOCK;
        act_quant_block(pc.p.act, addr_mad(pc.p.act, t, pc.p.act_nb1), h * per_head + l);
    }
#endif
}
