// softmax (core/ref/softmax.cpp softmax_row): max, det_exp, the sum as canon_sum over the
// workgroup's 32 invocations (invocation l adds elements i = l mod 32 in increasing i, then
// the fixed tree in shared memory), then each value canon_div by the sum. One workgroup per row.
#version 450
#extension GL_GOOGLE_include_directive : require
#include "shaders/common.glsl"
layout(local_size_x = 32) in;
layout(push_constant, std430) uniform Pc { PcSoftmax p; } pc;

shared float s_part[32];

void main() {
    const uint row = gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x;
    if (row >= pc.p.rows) return;  // uniform across the workgroup
    const uint l = gl_LocalInvocationID.x;
    const uint K = pc.p.K;
    const addr_t x = addr_mad(pc.p.x, row, K * 4u), y = addr_mad(pc.p.dst, row, K * 4u);
    const float sc = pc.p.p.scale;
    // The maximum is exact in any order (std::fmax's NaN rule kept).
    float mx = uintBitsToFloat(0xFF800000u);
    for (uint i = l; i < K; i += 32u) {
        precise float v = F32(x).v[i] * sc;
        mx = canon_fmax(mx, v);
    }
    s_part[l] = mx;
    barrier();
    mx = s_part[0];
    for (uint j = 1u; j < 32u; ++j) mx = canon_fmax(mx, s_part[j]);
    barrier();
    precise float sum = 0.0;
    for (uint i = l; i < K; i += 32u) {
        precise float v = F32(x).v[i] * sc - mx;
        const float e = det_exp(v);
        F32(y).v[i] = e;
        sum = sum + e;
    }
    s_part[l] = sum;
    for (uint w = 16u; w >= 1u; w >>= 1u) {
        barrier();
        if (l < w) {
            precise float t = s_part[l] + s_part[l + w];
            s_part[l] = t;
        }
    }
    barrier();
    const float total = s_part[0];
    for (uint i = l; i < K; i += 32u) F32(y).v[i] = canon_div(F32(y).v[i], total);
}
