// rms_norm (core/ref/rms_norm.cpp): the sum of squares in double, in element order (so the
// rounding of float(ss / K) matches), then the correctly rounded sqrt and quotient.
// One workgroup per row. The workgroup stages the row in shared memory chunk by chunk
// (coalesced loads, one round trip per chunk) and invocation 0 adds the squares from there
// in element order; the scaling, element by element independent, is spread over all
// invocations. (One invocation per row, as before, left a decode step's single row to one
// GPU thread walking global memory: rms_norm was the slowest shader on an H100.)
#version 450
#extension GL_GOOGLE_include_directive : require
#include "shaders/common.glsl"
layout(local_size_x = 64) in;
layout(push_constant, std430) uniform Pc { PcRmsNorm p; } pc;

const uint CHUNK = 2048u;  // 8 KiB of the row at a time (Vulkan guarantees 16 KiB)
shared float s_x[CHUNK];
shared float s_r;

void main() {
    const uint row = gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x;
    if (row >= pc.p.rows) return;  // uniform across the workgroup
    const uint l = gl_LocalInvocationID.x;
    const uint i1 = row % pc.p.ne1, i2 = (row / pc.p.ne1) % pc.p.ne2, i3 = row / (pc.p.ne1 * pc.p.ne2);
    const uint64_t x = pc.p.x + uint64_t(i1) * pc.p.nb1 + uint64_t(i2) * pc.p.nb2 + uint64_t(i3) * pc.p.nb3;
    const uint64_t y = pc.p.dst + uint64_t(row) * pc.p.K * 4u;
    const uint K = pc.p.K;
    precise double ss = 0.0;  // invocation 0's
    for (uint c0 = 0u; c0 < K; c0 += CHUNK) {
        const uint n = min(CHUNK, K - c0);
        for (uint i = l; i < n; i += 64u) s_x[i] = F32(x).v[c0 + i];
        barrier();
        if (l == 0u)
            for (uint i = 0u; i < n; ++i) {
                const double v = double(s_x[i]);
                precise double sq = v * v;
                ss = ss + sq;
            }
        barrier();
    }
    if (l == 0u) {
        precise float ms = d2f(ddiv_rn(ss, double(K))) + pc.p.p.eps;
        s_r = div_rn(1.0, sqrt_rn(ms));
    }
    barrier();
    const float r = s_r;
    for (uint i = l; i < K; i += 64u) {
        precise float v = F32(x).v[i] * r;
        if (pc.p.has_w != 0u) v = v * F32(pc.p.w).v[i];
        F32(y).v[i] = v;
    }
}
