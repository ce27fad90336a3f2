// A residual step and the next norm as one workgroup per row (backends/vulkan/fused.cpp):
// [y1 = rms_norm(x) * w1] (Gemma's post-norm), [s = res + y1, or res + x] (the residual add),
// y2 = rms_norm(s, or x) * w2 (the next sublayer's norm), and the _q8_* variants quantize y2
// for the mul_mat that reads it (act_quant.glsl), so a decode step's norm, add, norm and
// quantizer take one dispatch and no barrier between them. Each value is computed with the
// arithmetic of its own shader (rms_norm.comp, add.comp: the canonical 32 partials, the fixed
// tree, the correctly rounded quotient and root), so the bits are theirs. An invocation reads
// an element's inputs before it writes that element's outputs and later reads back only what
// it wrote itself, so an output may lie exactly over an input (the allocator reuses a dead
// input's rows); the quantizer reads y2 across the workgroup through coherent references,
// after a memory barrier.
// variant: norm_chain ATYPE=0
// variant: norm_chain_q8_0 ATYPE=LS_TYPE_Q8_0
// variant: norm_chain_q8_1 ATYPE=LS_TYPE_Q8_1
// variant: norm_chain_q8_k ATYPE=LS_TYPE_Q8_K
#version 450
#extension GL_GOOGLE_include_directive : require
#include "shaders/common.glsl"
layout(local_size_x = 32) in;
layout(push_constant, std430) uniform Pc { PcNormChain p; } pc;

shared float s_part[32];
layout(buffer_reference, std430, buffer_reference_align = 4) coherent buffer F32C { float v[]; };
addr_t g_y2;

// The fixed tree over the 32 partials (rms_norm.comp); every invocation gets the root.
float tree_sum(const uint l, const float part) {
    barrier();  // the previous tree's root has been read
    s_part[l] = part;
    for (uint w = 16u; w >= 1u; w >>= 1u) {
        barrier();
        if (l < w) {
            precise float t = s_part[l] + s_part[l + w];
            s_part[l] = t;
        }
    }
    barrier();
    return s_part[0];
}
float inv_rms(const float ss, const float eps) {
    precise float ms = canon_div(ss, float(pc.p.K)) + eps;
    return canon_div(1.0, canon_sqrt(ms));
}

#if ATYPE != 0
#if ATYPE == LS_TYPE_Q8_K
#define ACT_BLOCK 256u
#else
#define ACT_BLOCK 32u
#endif
#define ACT_IN(j) F32C(g_y2).v[b * ACT_BLOCK + (j)]
#include "shaders/act_quant.glsl"
#endif

void main() {
    const uint row = gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x;
    if (row >= pc.p.rows) return;  // uniform across the workgroup
    const uint l = gl_LocalInvocationID.x, K = pc.p.K, fl = pc.p.flags;
    const addr_t x = addr_mad(pc.p.x, row, K * 4u), res = addr_mad(pc.p.res, row, K * 4u);
    const addr_t y1 = addr_mad(pc.p.y1, row, K * 4u), s = addr_mad(pc.p.s, row, K * 4u);
    g_y2 = addr_mad(pc.p.y2, row, K * 4u);
    float r1 = 0.0;
    if ((fl & LS_NC_NORM1) != 0u) {
        precise float ss = 0.0;
        for (uint i = l; i < K; i += 32u) {
            const float v = F32(x).v[i];
            ss = ss + v * v;
        }
        r1 = inv_rms(tree_sum(l, ss), pc.p.eps1);  // every x read before any output is written
    }
    precise float ss2 = 0.0;
    for (uint i = l; i < K; i += 32u) {
        const float xi = F32(x).v[i];
        const float ri = (fl & LS_NC_ADD) != 0u ? F32(res).v[i] : 0.0;
        float v = xi;
        if ((fl & LS_NC_NORM1) != 0u) {
            precise float t = xi * r1;
            if ((fl & LS_NC_W1) != 0u) t = t * F32(pc.p.w1).v[i];
            F32(y1).v[i] = t;
            v = t;
        }
        if ((fl & LS_NC_ADD) != 0u) {
            precise float t = ri + v;
            F32(s).v[i] = t;
            v = t;
        }
        ss2 = ss2 + v * v;
    }
    const float r2 = inv_rms(tree_sum(l, ss2), pc.p.eps2);
    for (uint i = l; i < K; i += 32u) {
        // this invocation's own write of s (or x, which no output of this form overlies)
        precise float v = ((fl & LS_NC_ADD) != 0u ? F32(s).v[i] : F32(x).v[i]) * r2;
        if ((fl & LS_NC_W2) != 0u) v = v * F32(pc.p.w2).v[i];
        F32C(g_y2).v[i] = v;
    }
#if ATYPE != 0
    memoryBarrierBuffer();
    barrier();
    const addr_t arow = addr_mad(pc.p.act, row, pc.p.act_nb1);
    for (uint b = l; b < K / ACT_BLOCK; b += 32u) act_quant_block(pc.p.act, arow, b);
#endif
}
