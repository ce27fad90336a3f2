// ssm_scan (core/ref/ssm_scan.cpp, SEMANTICS.md section 2): one workgroup per (run, head h);
// invocation l owns the state rows p = l, l + 64, ... (P rows of N floats in the slot's memory,
// updated in place) and walks the run's tokens in scan order. Rows are independent, so this
// is the reference's recurrence row by row: the output is canon_dot (32 partial sums by
// element index, the fixed tree) held in one invocation, every other float operation a single
// rounding (precise, no fusing). The host validated the run table before recording.
#version 450
#extension GL_GOOGLE_include_directive : require
#include "shaders/common.glsl"
layout(local_size_x = 64) in;
layout(push_constant, std430) uniform Pc { PcSsmScan p; } pc;

void main() {
    const uint wg = gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x;
    const uint H = uint(pc.p.p.n_head), P = uint(pc.p.p.head_dim), N = uint(pc.p.p.d_state), G = uint(pc.p.p.n_group);
    if (wg >= pc.p.n_runs * H) return;  // uniform over the workgroup
    const uint ri = wg / H, h = wg % H, grp = h / (H / G);
    const int slot = I32(pc.p.runs).v[4u * ri], first = I32(pc.p.runs).v[4u * ri + 1u];
    const int n = I32(pc.p.runs).v[4u * ri + 2u], reset = I32(pc.p.runs).v[4u * ri + 3u];
    const float Ah = F32(pc.p.A).v[h];
    for (uint c = gl_LocalInvocationID.x; c < P; c += 64u) {
        const addr_t Sp = addr_mad(addr_mad(pc.p.state, uint(slot), pc.p.st_nb1), h * P + c, N * 4u);
        if (reset != 0)
            for (uint j = 0u; j < N; ++j) F32(Sp).v[j] = 0.0;
        for (int t = 0; t < n; ++t) {
            const uint tok = uint(I32(pc.p.order).v[first + t]);
            const addr_t row = addr_mad(pc.p.xbc, tok, pc.p.xbc_nb1);
            const addr_t B = addr_add(row, (H * P + grp * N) * 4u);
            const addr_t C = addr_add(row, (H * P + G * N + grp * N) * 4u);
            const float d = F32(pc.p.dt).v[tok * H + h];
            precise float da = d * Ah;
            const float a = det_exp(da);
            precise float u = d * F32(row).v[h * P + c];
            float part[32];
            for (uint l = 0u; l < 32u; ++l) part[l] = 0.0;
            for (uint j0 = 0u; j0 < N; j0 += 32u)
                for (uint l = 0u; l < 32u; ++l) {
                    const uint j = j0 + l;
                    if (j < N) {
                        precise float s = F32(Sp).v[j] * a;
                        precise float b = u * F32(B).v[j];
                        precise float sn = s + b;
                        F32(Sp).v[j] = sn;
                        precise float acc = part[l] + sn * F32(C).v[j];
                        part[l] = acc;
                    }
                }
            F32(pc.p.y).v[(tok * H + h) * P + c] = canon_tree(part);
        }
    }
}
