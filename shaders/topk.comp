// topk (core/ref/topk.cpp, core/rules/topk_rule.h): one invocation per column of x [E, T]. The
// order "larger value first, NaN last, equal values by lower index" is total, so every
// backend picks the same entries in the same order; the values' sum is canon_sum in
// selection order and each quotient canon_div (topk_values). Group-limited selection and a
// second source of the values: TopkParams.
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

// ids[0..k) over entries e of the column (every `stride`-th float from `col`, n of them) with
// keep[e / m] (use_keep false: all), as topk_select.
void select_top(addr_t col, int first, int n, int k, bool use_keep, int m, inout bool keep[TOPK_MAX], inout int ids[TOPK_MAX]) {
    for (int j = 0; j < k; ++j) {
        int best = -1;
        for (int e = 0; e < n; ++e) {
            if (use_keep && !keep[e / m]) continue;
            const float v = F32(col).v[first + e];
            if (j > 0 && !before(F32(col).v[first + ids[j - 1]], ids[j - 1], v, e)) continue;
            if (best < 0 || before(v, e, F32(col).v[first + best], best)) best = e;
        }
        ids[j] = best;
    }
}

void main() {
    const uint t = gl_GlobalInvocationID.x + gl_GlobalInvocationID.y * gl_NumWorkGroups.x * 64u;
    if (t >= pc.p.T) return;
    const addr_t col = addr_mad(pc.p.x, t, pc.p.x_nb1);
    const addr_t vcol = addr_mad(pc.p.v, t, pc.p.v_nb1);
    const int E = int(pc.p.E), k = pc.p.p.k, G = pc.p.p.n_group;
    int ids[TOPK_MAX];
    bool keep[TOPK_MAX];
    if (G > 1) {
        // topk_select_grouped: each group's score is the sum of its group_top best entries in
        // selection order; the group_used best groups stay eligible.
        const int m = E / G, top = pc.p.p.group_top;
        float score[TOPK_MAX];
        int pick[TOPK_MAX];
        for (int gi = 0; gi < G; ++gi) {
            select_top(col, gi * m, m, top, false, 1, keep, pick);
            precise float s = F32(col).v[gi * m + pick[0]];
            for (int j = 1; j < top; ++j) s = s + F32(col).v[gi * m + pick[j]];
            score[gi] = s;
            keep[gi] = false;
        }
        for (int j = 0; j < pc.p.p.group_used; ++j) {
            int best = -1;
            for (int gi = 0; gi < G; ++gi) {
                if (j > 0 && !before(score[pick[j - 1]], pick[j - 1], score[gi], gi)) continue;
                if (best < 0 || before(score[gi], gi, score[best], best)) best = gi;
            }
            pick[j] = best;
        }
        for (int j = 0; j < pc.p.p.group_used; ++j) keep[pick[j]] = true;
        select_top(col, 0, E, k, true, m, keep, ids);
    } else {
        select_top(col, 0, E, k, false, 1, keep, ids);
    }
    const addr_t o = addr_mad(pc.p.dst, t, uint(k) * 4u);
    if (pc.p.p.values == 0) {
        for (int j = 0; j < k; ++j) I32(o).v[j] = ids[j];
        return;
    }
    float part[32];
    for (uint l = 0u; l < 32u; ++l) part[l] = 0.0;
    for (int j = 0; j < k; ++j) {
        precise float t = part[j % 32] + F32(vcol).v[ids[j]];
        part[j % 32] = t;
    }
    const float s = canon_tree(part);
    for (int j = 0; j < k; ++j) {
        const float v = F32(vcol).v[ids[j]];
        F32(o).v[j] = pc.p.p.norm != 0 ? canon_div(v, s) : v;
    }
}
