// set_rows: dst row idx[i] = src row i converted to dst's type (core/ref/set_rows.cpp; the
// conversions in cache_store.glsl). One invocation per (source row, block); a row whose index
// reappears later is skipped, so the last writer wins. The host checked every index before
// recording anything.
#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_GOOGLE_include_directive : require
#include "shaders/common.glsl"
#include "shaders/cache_store.glsl"
layout(local_size_x = 64) in;
layout(push_constant, std430) uniform Pc { PcRows p; } pc;

int index_at(uint i) { return (pc.p.idx64 & 1u) != 0u ? I32(pc.p.idx).v[2u * i] : I32(pc.p.idx).v[i]; }

void main() {
    const uint bsz = cache_block_elems(pc.p.type);
    const uint nblk = pc.p.K / bsz;
    const uint g = gl_GlobalInvocationID.x + gl_GlobalInvocationID.y * gl_NumWorkGroups.x * 64u;
    if (g >= nblk * pc.p.n) return;
    const uint i = g / nblk, b = g % nblk;
    const int r = index_at(i);
    if ((pc.p.idx64 & LS_ROWS_REPEAT) != 0u)
        for (uint j = i + 1u; j < pc.p.n; ++j)
            if (index_at(j) == r) return;  // a later row overwrites this one
    const addr_t src = addr_mad(addr_mad(pc.p.src, i, pc.p.src_nb1), b, bsz * 4u);
    const addr_t dst = addr_mad(pc.p.dst, uint(r), pc.p.dst_nb1);
    float x[32];
    for (uint j = 0u; j < bsz; ++j) x[j] = F32(src).v[j];
    cache_store_block(pc.p.type, dst, b, x);
}
