// A gated FFN's activation and its product with up as one dispatch (backends/vulkan/fused.cpp):
// y = gelu(a) or silu(a) (gelu.comp, silu.comp), z = y * up (mul.comp), element by element
// with their arithmetic; the _q8_* variants also quantize z's rows of K for the down
// projection that reads them (act_quant.glsl), a workgroup of 32 per block of a row (its
// elements spread over the invocations, then one invocation quantizes the block from shared
// memory, as mul_mat_act.comp does from memory), so three dispatches and two barriers of a
// decode step become one. An invocation reads an element's a and up before it writes y and z
// there, so an output may lie exactly over an input.
// variant: glu_gelu ACT=1 ATYPE=0
// variant: glu_silu ACT=2 ATYPE=0
// variant: glu_gelu_q8_0 ACT=1 ATYPE=LS_TYPE_Q8_0
// variant: glu_silu_q8_0 ACT=2 ATYPE=LS_TYPE_Q8_0
// variant: glu_gelu_q8_1 ACT=1 ATYPE=LS_TYPE_Q8_1
// variant: glu_silu_q8_1 ACT=2 ATYPE=LS_TYPE_Q8_1
// variant: glu_gelu_q8_k ACT=1 ATYPE=LS_TYPE_Q8_K
// variant: glu_silu_q8_k ACT=2 ATYPE=LS_TYPE_Q8_K
#version 450
#extension GL_GOOGLE_include_directive : require
#include "shaders/common.glsl"
#if ATYPE == 0
layout(local_size_x = 64) in;
#else
layout(local_size_x = 32) in;
#endif
layout(push_constant, std430) uniform Pc { PcGlu p; } pc;

// y and z at element i (a and up read before anything is written there).
void glu_at(const uint i, out float y, out float z) {
    const float up = F32(pc.p.up).v[i];
    const float a = F32(pc.p.a).v[i];
#if ACT == 1
    y = det_gelu(a);
#else
    y = det_silu(a);
#endif
    precise float t = y * up;
    z = t;
    F32(pc.p.y).v[i] = y;
    F32(pc.p.z).v[i] = z;
}

#if ATYPE != 0
#if ATYPE == LS_TYPE_Q8_K
#define ACT_BLOCK 256u
#else
#define ACT_BLOCK 32u
#endif
shared float s_z[ACT_BLOCK];
#define ACT_IN(j) s_z[j]
#include "shaders/act_quant.glsl"
#endif

void main() {
#if ATYPE == 0
    const uint g = gl_GlobalInvocationID.x + gl_GlobalInvocationID.y * gl_NumWorkGroups.x * 64u;
    if (g >= pc.p.n) return;
    float y, z;
    glu_at(g, y, z);
#else
    const uint nblk = pc.p.K / ACT_BLOCK, rows = pc.p.n / pc.p.K;
    const uint blk = gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x;
    if (blk >= nblk * rows) return;  // uniform across the workgroup
    const uint r = blk / nblk, b = blk % nblk, l = gl_LocalInvocationID.x;
    const uint base = r * pc.p.K + b * ACT_BLOCK;
    for (uint j = l; j < ACT_BLOCK; j += 32u) {
        float y, z;
        glu_at(base + j, y, z);
        s_z[j] = z;
    }
    barrier();
    if (l == 0u) act_quant_block(pc.p.act, addr_mad(pc.p.act, r, pc.p.act_nb1), b);
#endif
}
