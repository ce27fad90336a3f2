// clamp over contiguous floats (core/ref/clamp.cpp): x < min ? min : (x > max ? max : x).
// The NaN test is explicit: a compiler may turn a compare-and-select into GLSL's min/max,
// which leave a NaN operand undefined; a NaN input is written back as it was read.
#version 450
#extension GL_GOOGLE_include_directive : require
#include "shaders/common.glsl"
layout(local_size_x = 64) in;
layout(push_constant, std430) uniform Pc { PcClamp p; } pc;

void main() {
    const uint g = gl_GlobalInvocationID.x + gl_GlobalInvocationID.y * gl_NumWorkGroups.x * 64u;
    if (g >= pc.p.n) return;
    const float x = F32(pc.p.x).v[g];
    const float lo = pc.p.p.min, hi = pc.p.p.max;
    F32(pc.p.dst).v[g] = isnan(x) ? x : (x < lo ? lo : (x > hi ? hi : x));
}
