// delta_scan (core/ref/delta_scan.cpp, SEMANTICS.md section 2): one workgroup per (run,
// value head h); invocation l owns the state rows i = l, l + 64, ... (Dv rows of Dk floats
// in the slot's memory, updated in place) and walks the run's tokens in scan order. Rows
// are independent, so this is the reference's recurrence row by row: every dot product is
// canon_dot (32 partial sums by element index, the fixed tree) held in one invocation, every
// other float operation a single rounding (precise, no fusing). The host validated the run
// table before recording.
#version 450
#extension GL_GOOGLE_include_directive : require
#include "shaders/common.glsl"
layout(local_size_x = 64) in;
layout(push_constant, std430) uniform Pc { PcDeltaScan p; } pc;

// canon_dot(a, a, n) of a float row at address a.
float self_dot(addr_t a, uint n) {
    float part[32];
    for (uint l = 0u; l < 32u; ++l) part[l] = 0.0;
    for (uint j0 = 0u; j0 < n; j0 += 32u)
        for (uint l = 0u; l < 32u; ++l)
            if (j0 + l < n) {
                const float v = F32(a).v[j0 + l];
                precise float s = part[l] + v * v;
                part[l] = s;
            }
    return canon_tree(part);
}

void main() {
    const uint wg = gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x;
    const uint Hk = uint(pc.p.p.n_k_heads), Dk = uint(pc.p.p.d_k), Hv = uint(pc.p.p.n_v_heads), Dv = uint(pc.p.p.d_v);
    if (wg >= pc.p.n_runs * Hv) return;  // uniform over the workgroup
    const uint ri = wg / Hv, h = wg % Hv;
    const int slot = I32(pc.p.runs).v[4u * ri], first = I32(pc.p.runs).v[4u * ri + 1u];
    const int n = I32(pc.p.runs).v[4u * ri + 2u], reset = I32(pc.p.runs).v[4u * ri + 3u];
    const uint hk = pc.p.p.head_map == HEADS_TILED ? h % Hk : h / (Hv / Hk);
    for (uint i = gl_LocalInvocationID.x; i < Dv; i += 64u) {
        const addr_t Si = addr_mad(addr_mad(pc.p.state, uint(slot), pc.p.st_nb1), h * Dv + i, Dk * 4u);
        if (reset != 0)
            for (uint j = 0u; j < Dk; ++j) F32(Si).v[j] = 0.0;
        for (int t = 0; t < n; ++t) {
            const uint tok = uint(I32(pc.p.order).v[first + t]);
            const addr_t row = addr_mad(pc.p.qkv, tok, pc.p.qkv_nb1);
            const addr_t q = addr_add(row, hk * Dk * 4u);
            const addr_t k = addr_add(row, (Hk * Dk + hk * Dk) * 4u);
            precise float nq = self_dot(q, Dk) + pc.p.p.eps;
            precise float nk = self_dot(k, Dk) + pc.p.p.eps;
            const float rq = canon_div(1.0, canon_sqrt(nq));
            const float rk = canon_div(1.0, canon_sqrt(nk));
            const float decay = det_exp(F32(pc.p.g).v[tok * Hv + h]);
            const float b = F32(pc.p.beta).v[tok * Hv + h];
            // S_i = e^g S_i, and canon_dot(S_i, kn) over the decayed row.
            float part[32];
            for (uint l = 0u; l < 32u; ++l) part[l] = 0.0;
            for (uint j0 = 0u; j0 < Dk; j0 += 32u)
                for (uint l = 0u; l < 32u; ++l) {
                    const uint j = j0 + l;
                    if (j < Dk) {
                        precise float s = F32(Si).v[j] * decay;
                        F32(Si).v[j] = s;
                        precise float kn = F32(k).v[j] * rk;
                        precise float acc = part[l] + s * kn;
                        part[l] = acc;
                    }
                }
            const float kv = canon_tree(part);
            precise float u = (F32(row).v[2u * Hk * Dk + h * Dv + i] - kv) * b;
            // S_i += u kn, and canon_dot(S_i, qn) with qn = q * rq * scale.
            for (uint l = 0u; l < 32u; ++l) part[l] = 0.0;
            for (uint j0 = 0u; j0 < Dk; j0 += 32u)
                for (uint l = 0u; l < 32u; ++l) {
                    const uint j = j0 + l;
                    if (j < Dk) {
                        precise float kn = F32(k).v[j] * rk;
                        precise float s = F32(Si).v[j] + u * kn;
                        F32(Si).v[j] = s;
                        precise float qn = F32(q).v[j] * rq * pc.p.p.scale;
                        precise float acc = part[l] + s * qn;
                        part[l] = acc;
                    }
                }
            F32(pc.p.y).v[(tok * Hv + h) * Dv + i] = canon_tree(part);
        }
    }
}
