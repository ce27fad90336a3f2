// the exact (erf) gelu over contiguous floats (core/ref/gelu_erf.cpp, core/rules/canon.h). One invocation per element.
#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_GOOGLE_include_directive : require
#include "shaders/common.glsl"
layout(local_size_x = 64) in;
layout(push_constant, std430) uniform Pc { PcUnary p; } pc;

void main() {
    const uint g = gl_GlobalInvocationID.x + gl_GlobalInvocationID.y * gl_NumWorkGroups.x * 64u;
    if (g >= pc.p.n) return;
    const float x = F32(pc.p.x).v[g];
    const float r = det_gelu_erf(x);
    F32(pc.p.dst).v[g] = r;
}
