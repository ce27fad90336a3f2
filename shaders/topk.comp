// topk (core/ref/topk.cpp, core/rules/topk_rule.h): one invocation per column of x [E, T]. The
// order "larger value first, NaN last, equal values by lower index" is total, so every
// backend picks the same entries in the same order; the values' sum is canon_sum in
// selection order and each quotient canon_div (topk_values).
#version 450
#extension GL_GOOGLE_include_directive : require
#include "shaders/common.glsl"
layout(local_size_x = 64) in;
layout(push_constant, std430) uniform Pc { PcTopk p; } pc;

const int TOPK_MAX = 64;  // core/rules/topk_rule.h kTopkMax

bool before(float xa, int a, float xb, int b) {
    const bool na = isnan(xa), nb = isnan(xb);
    if (na != nb) return nb;
    if (!na && xa != xb) return xa > xb;
    return a < b;
}

void main() {
    const uint t = gl_GlobalInvocationID.x + gl_GlobalInvocationID.y * gl_NumWorkGroups.x * 64u;
    if (t >= pc.p.T) return;
    const addr_t col = addr_mad(pc.p.x, t, pc.p.x_nb1);
    const int E = int(pc.p.E), k = pc.p.p.k;
    int ids[TOPK_MAX];
    for (int j = 0; j < k; ++j) {
        int best = -1;
        for (int e = 0; e < E; ++e) {
            const float v = F32(col).v[e];
            if (j > 0 && !before(F32(col).v[ids[j - 1]], ids[j - 1], v, e)) continue;
            if (best < 0 || before(v, e, F32(col).v[best], best)) best = e;
        }
        ids[j] = best;
    }
    const addr_t o = addr_mad(pc.p.dst, t, uint(k) * 4u);
    if (pc.p.p.values == 0) {
        for (int j = 0; j < k; ++j) I32(o).v[j] = ids[j];
        return;
    }
    float part[32];
    for (uint l = 0u; l < 32u; ++l) part[l] = 0.0;
    for (int j = 0; j < k; ++j) {
        precise float t = part[j % 32] + F32(col).v[ids[j]];
        part[j % 32] = t;
    }
    const float s = canon_tree(part);
    for (int j = 0; j < k; ++j) {
        const float v = F32(col).v[ids[j]];
        F32(o).v[j] = pc.p.p.norm != 0 ? canon_div(v, s) : v;
    }
}
