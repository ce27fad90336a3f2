// concat (core/ref/concat.cpp): one invocation per element of dst [A + B, n1, n2], contiguous;
// a and b read through their strides. B = 0: a contiguous copy of a.
#version 450
#extension GL_GOOGLE_include_directive : require
#include "shaders/common.glsl"
layout(local_size_x = 64) in;
layout(push_constant, std430) uniform Pc { PcConcat p; } pc;

void main() {
    const uint g = gl_GlobalInvocationID.x + gl_GlobalInvocationID.y * gl_NumWorkGroups.x * 64u;
    if (g >= pc.p.n) return;
    const uint W = pc.p.A + pc.p.B, e = g % W, r = g / W, i1 = r % pc.p.n1, i2 = r / pc.p.n1;
    float x;
    if (e < pc.p.A) x = F32(addr_mad(addr_mad(pc.p.a, i1, pc.p.a_nb1), i2, pc.p.a_nb2)).v[e];
    else x = F32(addr_mad(addr_mad(pc.p.b, i1, pc.p.b_nb1), i2, pc.p.b_nb2)).v[e - pc.p.A];
    F32(pc.p.dst).v[g] = x;
}
