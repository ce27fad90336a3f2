// get_rows: dst F32 [K, n], row i = src row idx[i] dequantized (core/ref/get_rows.cpp). The
// host checked every index before recording. One invocation per output element.
#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_GOOGLE_include_directive : require
#include "shaders/common.glsl"
layout(local_size_x = 64) in;
layout(push_constant, std430) uniform Pc { PcRows p; } pc;

void main() {
    const uint g = gl_GlobalInvocationID.x + gl_GlobalInvocationID.y * gl_NumWorkGroups.x * 64u;
    if (g >= pc.p.K * pc.p.n) return;
    const uint i = g / pc.p.K, e = g % pc.p.K;
    const int r = pc.p.idx64 != 0u ? I32(pc.p.idx).v[2u * i] : I32(pc.p.idx).v[i];
    const addr_t row = addr_mad(pc.p.src, uint(r), pc.p.src_nb1);
    F32(addr_mad(pc.p.dst, i, pc.p.dst_nb1)).v[e] = dequant_elem(pc.p.type, row, e);
}
