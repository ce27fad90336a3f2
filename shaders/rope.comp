// rope (core/ref/rope.cpp): the angles' cos and sin come from the host, computed with the
// reference's double formula (GLSL has no double sin/cos/pow); the rotation is the
// reference's float arithmetic. One invocation per (pair or pass-through element, head, token).
#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_GOOGLE_include_directive : require
#include "shaders/common.glsl"
layout(local_size_x = 64) in;
layout(push_constant, std430) uniform Pc { PcRope p; } pc;

void main() {
    const uint g = gl_GlobalInvocationID.x + gl_GlobalInvocationID.y * gl_NumWorkGroups.x * 64u;
    const uint half_ = uint(pc.p.p.n_dims) / 2u;
    const uint per_head = half_ + (pc.p.D - uint(pc.p.p.n_dims));
    if (g >= per_head * pc.p.H * pc.p.T) return;
    const uint i = g % per_head, h = (g / per_head) % pc.p.H, t = g / (per_head * pc.p.H);
    const addr_t x = addr_mad(addr_mad(pc.p.x, h, pc.p.nb1), t, pc.p.nb2);
    const addr_t y = addr_mad(pc.p.dst, t * pc.p.H + h, pc.p.D * 4u);
    if (i >= half_) {
        const uint e = uint(pc.p.p.n_dims) + (i - half_);
        F32(y).v[e] = F32(x).v[e];
        return;
    }
    const float c = F32(pc.p.cs).v[2u * (t * half_ + i)], s = F32(pc.p.cs).v[2u * (t * half_ + i) + 1u];
    const uint i0 = pc.p.p.mode == ROPE_NEOX ? i : 2u * i;
    const uint i1 = pc.p.p.mode == ROPE_NEOX ? i + half_ : 2u * i + 1u;
    const float a = F32(x).v[i0], b = F32(x).v[i1];
    precise float r0 = a * c - b * s;
    precise float r1 = a * s + b * c;
    F32(y).v[i0] = r0;
    F32(y).v[i1] = r1;
}
