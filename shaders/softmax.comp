// softmax (core/ref/softmax.cpp): max, det_exp, the sum in double in element order, then
// each value as the correctly rounded double quotient rounded to float. One invocation per row.
#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_GOOGLE_include_directive : require
#include "shaders/common.glsl"
layout(local_size_x = 64) in;
layout(push_constant, std430) uniform Pc { PcSoftmax p; } pc;

void main() {
    const uint row = gl_GlobalInvocationID.x + gl_GlobalInvocationID.y * gl_NumWorkGroups.x * 64u;
    if (row >= pc.p.rows) return;
    const uint K = pc.p.K;
    const uint64_t x = pc.p.x + uint64_t(row) * K * 4u, y = pc.p.dst + uint64_t(row) * K * 4u;
    const float sc = pc.p.p.scale;
    float mx = uintBitsToFloat(0xFF800000u);
    for (uint i = 0u; i < K; ++i) {
        precise float v = F32(x).v[i] * sc;
        mx = max(mx, v);
    }
    precise double sum = 0.0;
    for (uint i = 0u; i < K; ++i) {
        precise float v = F32(x).v[i] * sc - mx;
        const float e = det_exp(v);
        F32(y).v[i] = e;
        sum = sum + double(e);
    }
    for (uint i = 0u; i < K; ++i) F32(y).v[i] = d2f(ddiv_rn(double(F32(y).v[i]), sum));
}
