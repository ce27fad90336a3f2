// layer_norm (core/ref/layer_norm.cpp): the row's canonical sum (invocation l of the
// workgroup's 32 holds partial sum l: elements i = l mod 32, increasing i; then the fixed tree
// in shared memory), the mean, the centred row written to y, its canonical sum of squares the
// same way, the correctly rounded quotient and sqrt (shaders/canon.glsl), then
// ((d * r) * w) + b. One workgroup per row.
#version 450
#extension GL_GOOGLE_include_directive : require
#include "shaders/common.glsl"
layout(local_size_x = 32) in;
layout(push_constant, std430) uniform Pc { PcLayerNorm p; } pc;

shared float s_part[32];

// The fixed tree over s_part; every invocation gets the sum.
float tree_sum(uint l, float v) {
    s_part[l] = v;
    for (uint w = 16u; w >= 1u; w >>= 1u) {
        barrier();
        if (l < w) {
            precise float t = s_part[l] + s_part[l + w];
            s_part[l] = t;
        }
    }
    barrier();
    const float s = s_part[0];
    barrier();  // s_part is written again by the next sum
    return s;
}

void main() {
    const uint row = gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x;
    if (row >= pc.p.rows) return;  // uniform across the workgroup
    const uint l = gl_LocalInvocationID.x;
    const uint i1 = row % pc.p.ne1, i2 = (row / pc.p.ne1) % pc.p.ne2, i3 = row / (pc.p.ne1 * pc.p.ne2);
    const addr_t x = addr_mad(addr_mad(addr_mad(pc.p.x, i1, pc.p.nb1), i2, pc.p.nb2), i3, pc.p.nb3);
    const addr_t y = addr_mad(pc.p.dst, row, pc.p.K * 4u);
    const uint K = pc.p.K;
    precise float s = 0.0;
    for (uint i = l; i < K; i += 32u) s = s + F32(x).v[i];
    const float mean = canon_div(tree_sum(l, s), float(K));
    precise float ss = 0.0;
    for (uint i = l; i < K; i += 32u) {
        precise float d = F32(x).v[i] - mean;
        F32(y).v[i] = d;
        ss = ss + d * d;
    }
    precise float ms = canon_div(tree_sum(l, ss), float(K)) + pc.p.p.eps;
    const float r = canon_div(1.0, canon_sqrt(ms));
    for (uint i = l; i < K; i += 32u) {
        precise float v = F32(y).v[i] * r;
        if ((pc.p.flags & 1u) != 0u) v = v * F32(pc.p.w).v[i];
        if ((pc.p.flags & 2u) != 0u) v = v + F32(pc.p.b).v[i];
        F32(y).v[i] = v;
    }
}
