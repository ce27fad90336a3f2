// set_rows: dst row idx[i] = src row i converted to dst's type (core/ref/set_rows.cpp, the
// reference quantizers of core/quant/quant_legacy.cpp bit for bit). One invocation per (source
// row, block); a row whose index reappears later is skipped, so the last writer wins. The
// host checked every index before recording anything.
#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_GOOGLE_include_directive : require
#include "shaders/common.glsl"
layout(local_size_x = 64) in;
layout(push_constant, std430) uniform Pc { PcRows p; } pc;

int index_at(uint i) { return (pc.p.idx64 & 1u) != 0u ? I32(pc.p.idx).v[2u * i] : I32(pc.p.idx).v[i]; }

void main() {
    const uint bsz = (pc.p.type == LS_TYPE_Q8_0 || pc.p.type == LS_TYPE_Q4_0) ? 32u : 1u;
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
    if (pc.p.type == LS_TYPE_F32) { F32(dst).v[b] = F32(src).v[0]; return; }
    if (pc.p.type == LS_TYPE_F16) { st16(dst, 2u * b, f2h(F32(src).v[0])); return; }
    if (pc.p.type == LS_TYPE_BF16) { st16(dst, 2u * b, f2bf(F32(src).v[0])); return; }
    float x[32];
    for (uint j = 0u; j < 32u; ++j) x[j] = F32(src).v[j];
    if (pc.p.type == LS_TYPE_Q8_0) {
        // d = amax / 127, q = rne(x * (127 / amax))
        float amax = 0.0;
        for (uint j = 0u; j < 32u; ++j) amax = max(amax, abs(x[j]));
        const float d = canon_div(amax, 127.0);
        const float id = amax != 0.0 ? canon_div(127.0, amax) : 0.0;
        const addr_t blk = addr_mad(dst, b, 34u);
        st16(blk, 0u, f2h(d));
        for (uint j = 0u; j < 32u; ++j) {
            precise float v = x[j] * id;
            st8(blk, 2u + j, uint(int(roundEven(v))) & 0xFFu);
        }
        return;
    }
    // Q4_0: the element of largest magnitude (first one, sign kept) maps to -8.
    float amax = 0.0, mx = 0.0;
    for (uint j = 0u; j < 32u; ++j)
        if (abs(x[j]) > amax) { amax = abs(x[j]); mx = x[j]; }
    const float d = canon_div(mx, -8.0);
    const float id = d != 0.0 ? canon_div(1.0, d) : 0.0;
    const addr_t blk = addr_mad(dst, b, 18u);
    st16(blk, 0u, f2h(d));
    for (uint j = 0u; j < 16u; ++j) {
        precise float v0 = x[j] * id, v1 = x[j + 16u] * id;
        const int q0 = clamp(int(roundEven(v0)) + 8, 0, 15), q1 = clamp(int(roundEven(v1)) + 8, 0, 15);
        st8(blk, 2u + j, uint(q0) | (uint(q1) << 4));
    }
}
