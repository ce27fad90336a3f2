// mul: dst = a * b with b broadcast over a (core/ref/mul.cpp). One invocation per element.
#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_GOOGLE_include_directive : require
#include "shaders/common.glsl"
layout(local_size_x = 64) in;
layout(push_constant, std430) uniform Pc { PcBinary p; } pc;

void main() {
    const uint g = gl_GlobalInvocationID.x + gl_GlobalInvocationID.y * gl_NumWorkGroups.x * 64u;
    const uint n = pc.p.ne0 * pc.p.ne1 * pc.p.ne2 * pc.p.ne3;
    if (g >= n) return;
    const uint i0 = g % pc.p.ne0, i1 = (g / pc.p.ne0) % pc.p.ne1, i2 = (g / (pc.p.ne0 * pc.p.ne1)) % pc.p.ne2,
               i3 = g / (pc.p.ne0 * pc.p.ne1 * pc.p.ne2);
    const float a = F32(addr_mad(addr_mad(addr_mad(pc.p.a, i1, pc.p.anb1), i2, pc.p.anb2), i3, pc.p.anb3)).v[i0];
    const float b = F32(addr_mad(addr_mad(addr_mad(pc.p.b, i1 % pc.p.bne1, pc.p.bnb1), i2 % pc.p.bne2, pc.p.bnb2),
                                 i3 % pc.p.bne3, pc.p.bnb3)).v[i0 % pc.p.bne0];
    precise float r = a * b;
    F32(pc.p.dst).v[g] = r;
}
