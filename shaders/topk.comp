// topk (core/ref/topk.cpp, core/rules/topk_rule.h): one invocation per column of x [E, T]. The
// order "larger value first, NaN last, equal values by lower index" is total, so every
// backend picks the same entries in the same order; the values' sum is in double in
// selection order and each quotient is rounded once.
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
    const uint64_t col = pc.p.x + uint64_t(t) * pc.p.x_nb1;
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
    const uint64_t o = pc.p.dst + uint64_t(t) * uint64_t(k) * 4u;
    if (pc.p.p.values == 0) {
        for (int j = 0; j < k; ++j) I32(o).v[j] = ids[j];
        return;
    }
    precise double s = 0.0;
    for (int j = 0; j < k; ++j) s = s + double(F32(col).v[ids[j]]);
    for (int j = 0; j < k; ++j) {
        const float v = F32(col).v[ids[j]];
        F32(o).v[j] = pc.p.p.norm != 0 ? d2f(ddiv_rn(double(v), s)) : v;
    }
}
