// delta_scan (core/ref/delta_scan.cpp, SEMANTICS.md section 2): one workgroup per (run,
// value head h); invocation l owns the state rows i = l, l + 64, ... (Dv rows of Dk floats
// in the slot's memory, updated in place) and walks the run's tokens in scan order. Rows
// are independent, so this is the reference's recurrence row by row: dot products sum exact
// products in double in det_dot4's order (partial sums by j mod 4, then (s0 + s1) + (s2 + s3)),
// float operations are single roundings (precise, no fusing). The host validated the run
// table before recording.
#version 450
#extension GL_GOOGLE_include_directive : require
#include "shaders/common.glsl"
layout(local_size_x = 64) in;
layout(push_constant, std430) uniform Pc { PcDeltaScan p; } pc;

// det_dot4(a, a, n) of a float row at address a.
float self_dot4(uint64_t a, uint n) {
    precise double s0 = 0.0, s1 = 0.0, s2 = 0.0, s3 = 0.0;
    for (uint j = 0u; j < n; ++j) {
        const double v = double(F32(a).v[j]);
        precise double pr = v * v;
        const uint r = j % 4u;
        if (r == 0u) s0 = s0 + pr;
        else if (r == 1u) s1 = s1 + pr;
        else if (r == 2u) s2 = s2 + pr;
        else s3 = s3 + pr;
    }
    precise double t = (s0 + s1) + (s2 + s3);
    return d2f(t);
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
        const uint64_t Si = pc.p.state + uint64_t(slot) * pc.p.st_nb1 + (uint64_t(h) * Dv + i) * Dk * 4u;
        if (reset != 0)
            for (uint j = 0u; j < Dk; ++j) F32(Si).v[j] = 0.0;
        for (int t = 0; t < n; ++t) {
            const uint tok = uint(I32(pc.p.order).v[first + t]);
            const uint64_t row = pc.p.qkv + uint64_t(tok) * pc.p.qkv_nb1;
            const uint64_t q = row + uint64_t(hk * Dk) * 4u;
            const uint64_t k = row + uint64_t(Hk * Dk + hk * Dk) * 4u;
            precise float nq = self_dot4(q, Dk) + pc.p.p.eps;
            precise float nk = self_dot4(k, Dk) + pc.p.p.eps;
            const float rq = div_rn(1.0, sqrt_rn(nq));
            const float rk = div_rn(1.0, sqrt_rn(nk));
            const float decay = det_exp(F32(pc.p.g).v[tok * Hv + h]);
            const float b = F32(pc.p.beta).v[tok * Hv + h];
            precise double sk0 = 0.0, sk1 = 0.0, sk2 = 0.0, sk3 = 0.0;
            for (uint j = 0u; j < Dk; ++j) {
                precise float s = F32(Si).v[j] * decay;
                F32(Si).v[j] = s;
                precise float kn = F32(k).v[j] * rk;
                precise double pr = double(s) * double(kn);
                const uint r = j % 4u;
                if (r == 0u) sk0 = sk0 + pr;
                else if (r == 1u) sk1 = sk1 + pr;
                else if (r == 2u) sk2 = sk2 + pr;
                else sk3 = sk3 + pr;
            }
            precise double kvd = (sk0 + sk1) + (sk2 + sk3);
            const float kv = d2f(kvd);
            precise float diff = F32(row).v[2u * Hk * Dk + h * Dv + i] - kv;
            precise float u = diff * b;
            precise double sq0 = 0.0, sq1 = 0.0, sq2 = 0.0, sq3 = 0.0;
            for (uint j = 0u; j < Dk; ++j) {
                precise float kn = F32(k).v[j] * rk;
                precise float upd = u * kn;
                precise float s = F32(Si).v[j] + upd;
                F32(Si).v[j] = s;
                precise float qn = F32(q).v[j] * rq;
                precise float qs = qn * pc.p.p.scale;
                precise double pr = double(s) * double(qs);
                const uint r = j % 4u;
                if (r == 0u) sq0 = sq0 + pr;
                else if (r == 1u) sq1 = sq1 + pr;
                else if (r == 2u) sq2 = sq2 + pr;
                else sq3 = sq3 + pr;
            }
            precise double yd = (sq0 + sq1) + (sq2 + sq3);
            F32(pc.p.y).v[(tok * Hv + h) * Dv + i] = d2f(yd);
        }
    }
}
