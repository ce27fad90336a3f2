// One chain of a layer's per-head rows as one dispatch (backends/vulkan/fused.cpp): a head's
// rms_norm (Gemma 3, Qwen3), its rope, and the write of the token's row into the K cache,
// which a decode step records as up to three dispatches with a barrier between each. A
// workgroup takes one row (a head of a token): it reads the row into shared memory once and
// runs the stages in turn with the arithmetic of their own shaders (rms_norm.comp: the
// canonical 32 partials and the fixed tree; rope.comp; set_rows.comp's conversions,
// cache_store.glsl), writing each stage's output. The whole row is read before anything is
// written, so an output may lie exactly over the chain's input.
#version 450
#extension GL_GOOGLE_include_directive : require
#include "shaders/common.glsl"
#include "shaders/cache_store.glsl"
layout(local_size_x = 32) in;
layout(push_constant, std430) uniform Pc { PcHeadRows p; } pc;

shared float s_row[LS_HR_ROW_MAX];
shared float s_part[32];

int index_at(const uint t) { return (pc.p.flags & LS_HR_IDX64) != 0u ? I32(pc.p.idx).v[2u * t] : I32(pc.p.idx).v[t]; }

// rms_norm.comp over the row at s_row[o]: the 32 partials, the fixed tree, then x * r * w.
void norm_row(const uint o, const uint l) {
    const uint D = pc.p.D;
    precise float ss = 0.0;
    for (uint i = l; i < D; i += 32u) {
        const float v = s_row[o + i];
        ss = ss + v * v;
    }
    barrier();  // the previous row's root has been read
    s_part[l] = ss;
    for (uint w = 16u; w >= 1u; w >>= 1u) {
        barrier();
        if (l < w) {
            precise float t = s_part[l] + s_part[l + w];
            s_part[l] = t;
        }
    }
    barrier();
    precise float ms = canon_div(s_part[0], float(D)) + pc.p.eps;
    const float r = canon_div(1.0, canon_sqrt(ms));
    for (uint i = l; i < D; i += 32u) {
        precise float v = s_row[o + i] * r;
        if ((pc.p.flags & LS_HR_W) != 0u) v = v * F32(pc.p.w).v[i];
        s_row[o + i] = v;
    }
}
// rope.comp over the row at s_row[o] of token t: each pair by one invocation.
void rope_row(const uint o, const uint t, const uint l) {
    const uint half_ = pc.p.n_dims / 2u;
    for (uint i = l; i < half_; i += 32u) {
        const float c = F32(pc.p.cs).v[2u * (t * half_ + i)], s = F32(pc.p.cs).v[2u * (t * half_ + i) + 1u];
        const uint i0 = pc.p.mode == ROPE_NEOX ? i : 2u * i;
        const uint i1 = pc.p.mode == ROPE_NEOX ? i + half_ : 2u * i + 1u;
        const float a = s_row[o + i0], b = s_row[o + i1];
        precise float r0 = a * c - b * s;
        precise float r1 = a * s + b * c;
        s_row[o + i0] = r0;
        s_row[o + i1] = r1;
    }
}
// set_rows.comp: head h of token t into its cache row, unless a later token writes that row.
void set_row(const uint o, const uint t, const uint h, const uint l) {
    const int dst = index_at(t);
    if ((pc.p.flags & LS_HR_REPEAT) != 0u)
        for (uint u = t + 1u; u < pc.p.n_tok; ++u)
            if (index_at(u) == dst) return;  // a later token writes this cache row
    const addr_t crow = addr_mad(pc.p.cache, uint(dst), pc.p.cache_nb1);
    const uint bsz = cache_block_elems(pc.p.cache_type), nblk = pc.p.D / bsz;
    for (uint b = l; b < nblk; b += 32u) {
        float v[32];
        for (uint j = 0u; j < bsz; ++j) v[j] = s_row[o + b * bsz + j];
        cache_store_block(pc.p.cache_type, crow, h * nblk + b, v);
    }
}

void main() {
    const uint l = gl_LocalInvocationID.x, D = pc.p.D, fl = pc.p.flags, P = pc.p.per_token;
    const uint row = gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x;
    if (row >= pc.p.rows) return;  // uniform across the workgroup
    const addr_t x = addr_mad(pc.p.x, row, D * 4u);
    for (uint i = l; i < D; i += 32u) s_row[i] = F32(x).v[i];
    barrier();
    if ((fl & LS_HR_NORM) != 0u) {
        norm_row(0u, l);
        const addr_t y = addr_mad(pc.p.norm_y, row, D * 4u);
        for (uint i = l; i < D; i += 32u) F32(y).v[i] = s_row[i];
        barrier();
    }
    if ((fl & LS_HR_ROPE) != 0u) {
        rope_row(0u, row / P, l);
        barrier();
        const addr_t y = addr_mad(pc.p.rope_y, row, D * 4u);
        for (uint i = l; i < D; i += 32u) F32(y).v[i] = s_row[i];
    }
    if ((fl & LS_HR_SET) != 0u) set_row(0u, row / P, row % P, l);
}
