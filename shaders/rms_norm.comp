// rms_norm (core/ref/rms_norm.cpp): the sum of squares in double, in element order (so the
// rounding of float(ss / K) matches), then the correctly rounded sqrt and quotient. One
// invocation per row.
#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_GOOGLE_include_directive : require
#include "shaders/common.glsl"
layout(local_size_x = 64) in;
layout(push_constant, std430) uniform Pc { PcRmsNorm p; } pc;

void main() {
    const uint row = gl_GlobalInvocationID.x + gl_GlobalInvocationID.y * gl_NumWorkGroups.x * 64u;
    if (row >= pc.p.rows) return;
    const uint i1 = row % pc.p.ne1, i2 = (row / pc.p.ne1) % pc.p.ne2, i3 = row / (pc.p.ne1 * pc.p.ne2);
    const uint64_t x = pc.p.x + uint64_t(i1) * pc.p.nb1 + uint64_t(i2) * pc.p.nb2 + uint64_t(i3) * pc.p.nb3;
    const uint64_t y = pc.p.dst + uint64_t(row) * pc.p.K * 4u;
    const uint K = pc.p.K;
    precise double ss = 0.0;
    for (uint i = 0u; i < K; ++i) {
        const double v = double(F32(x).v[i]);
        precise double sq = v * v;
        ss = ss + sq;
    }
    precise float ms = d2f(ddiv_rn(ss, double(K))) + pc.p.p.eps;
    const float r = div_rn(1.0, sqrt_rn(ms));
    for (uint i = 0u; i < K; ++i) {
        precise float v = F32(x).v[i] * r;
        if (pc.p.has_w != 0u) v = v * F32(pc.p.w).v[i];
        F32(y).v[i] = v;
    }
}
