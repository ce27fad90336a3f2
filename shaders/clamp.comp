// clamp over contiguous floats (core/ref/clamp.cpp): x < min ? min : (x > max ? max : x).
// Compared and selected as integers: NVIDIA's Vulkan driver flushed subnormal operands of the
// float compare-and-select (on an H100, clamp(-1e-40, 0, 1) and subnormals passed through came
// out as zeros of either sign), where the reference keeps them. The key orders floats as
// their values do, with -0 equal to +0; a NaN input is written back as it was read. The
// bounds are never NaN or subnormal (checked when the node is made).
#version 450
#extension GL_GOOGLE_include_directive : require
#include "shaders/common.glsl"
layout(local_size_x = 64) in;
layout(push_constant, std430) uniform Pc { PcClamp p; } pc;

int order_key(int bits) { return bits < 0 ? -(bits & 0x7fffffff) : bits; }

void main() {
    const uint g = gl_GlobalInvocationID.x + gl_GlobalInvocationID.y * gl_NumWorkGroups.x * 64u;
    if (g >= pc.p.n) return;
    const int x = I32(pc.p.x).v[g];
    const int lo = floatBitsToInt(pc.p.p.min), hi = floatBitsToInt(pc.p.p.max);
    const int kx = order_key(x);
    const bool nan = (x & 0x7fffffff) > 0x7f800000;
    I32(pc.p.dst).v[g] = nan ? x : (kx < order_key(lo) ? lo : (kx > order_key(hi) ? hi : x));
}
