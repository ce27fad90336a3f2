// get_rows: dst F32 [K, n], row i = src row idx[i] dequantized (core/ref/get_rows.cpp). The
// host checked every index before recording. One invocation per output element; the grid
// i-quants (a variant per type, WTYPE: their codebook in shared memory, shaders/iq_grid.glsl)
// one per group of 8 elements, the elements of one codebook entry.
// variant: get_rows
// variant: get_rows_iq2_xxs WTYPE=LS_TYPE_IQ2_XXS
// variant: get_rows_iq2_xs WTYPE=LS_TYPE_IQ2_XS
// variant: get_rows_iq2_s WTYPE=LS_TYPE_IQ2_S
// variant: get_rows_iq3_xxs WTYPE=LS_TYPE_IQ3_XXS
// variant: get_rows_iq3_s WTYPE=LS_TYPE_IQ3_S
// variant: get_rows_iq1_s WTYPE=LS_TYPE_IQ1_S
// variant: get_rows_iq1_m WTYPE=LS_TYPE_IQ1_M
#version 450
#extension GL_GOOGLE_include_directive : require
#include "shaders/common.glsl"
layout(local_size_x = 64) in;
layout(push_constant, std430) uniform Pc { PcRows p; } pc;
#ifdef WTYPE
#include "shaders/iq_grid.glsl"
#endif

void main() {
    const uint g = gl_GlobalInvocationID.x + gl_GlobalInvocationID.y * gl_NumWorkGroups.x * 64u;
#ifdef WTYPE
    iq_grid_load();  // before any invocation returns
    const uint G = pc.p.K / 8u;  // groups per row (K is a multiple of 256)
    if (g >= G * pc.p.n) return;
    const uint i = g / G, grp = g % G;
#else
    if (g >= pc.p.K * pc.p.n) return;
    const uint i = g / pc.p.K, e = g % pc.p.K;
#endif
    const int r = pc.p.idx64 != 0u ? I32(pc.p.idx).v[2u * i] : I32(pc.p.idx).v[i];
    const addr_t row = addr_mad(pc.p.src, uint(r), pc.p.src_nb1);
#ifdef WTYPE
    float y[8];
    grid_dequant8(row, grp, y);
    const addr_t dst = addr_mad(pc.p.dst, i, pc.p.dst_nb1);
    [[unroll]] for (uint j = 0u; j < 8u; ++j) F32(dst).v[8u * grp + j] = y[j];
#else
    F32(addr_mad(pc.p.dst, i, pc.p.dst_nb1)).v[e] = dequant_elem(pc.p.type, row, e);
#endif
}
