// attention over a ring-buffered KV cache (core/ref/attention.cpp, SEMANTICS.md section 1):
// query (s, p) reads keys max(0, p-W+1)..p of its slot, key k at row s*R + k mod R. One
// workgroup per (token, head). Each score is one invocation's in-order double dot (as
// det_dot), the exp sum is one invocation's in-order double sum, and each output element is
// one invocation's fma chain over the keys in order, so the result is the reference's bits.
// The host checked every (seq, pos) before recording.
#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_GOOGLE_include_directive : require
#include "shaders/common.glsl"
layout(local_size_x = 64) in;
layout(push_constant, std430) uniform Pc { PcAttention p; } pc;
layout(buffer_reference, std430, buffer_reference_align = 4) coherent buffer F32C { float v[]; };

shared float s_max[64];
shared double s_sum;

void main() {
    const uint l = gl_LocalInvocationID.x;
    const uint h = gl_WorkGroupID.x, t = gl_WorkGroupID.y;
    const int W = pc.p.p.window, R = pc.p.p.ring_rows;
    const int s = I32(pc.p.seq).v[t], pt = I32(pc.p.pos).v[t];
    const int k0 = W > 0 ? max(0, pt - W + 1) : 0;
    const uint n = uint(pt - k0 + 1);
    const uint hk = h / (pc.p.H / uint(pc.p.p.n_head_kv));
    const uint64_t q = pc.p.q + uint64_t(h) * pc.p.q_nb1 + uint64_t(t) * pc.p.q_nb2;
    F32C sc = F32C(pc.p.scores + (uint64_t(t) * pc.p.H + h) * pc.p.max_keys * 4u);

    float mx = uintBitsToFloat(0xFF800000u);
    for (uint j = l; j < n; j += 64u) {
        const int kp = k0 + int(j);
        const uint64_t krow = pc.p.k + uint64_t(s * R + kp % R) * pc.p.k_nb1;
        precise double acc = 0.0;
        for (uint i = 0u; i < pc.p.Dk; ++i) {
            precise double prod = double(F32(q).v[i]) * double(dequant_elem(pc.p.ktype, krow, hk * pc.p.Dk + i));
            acc = acc + prod;
        }
        precise float v = d2f(acc) * pc.p.p.scale;
        if (pc.p.p.softcap > 0.0) v = pc.p.p.softcap * det_tanh(div_rn(v, pc.p.p.softcap));
        sc.v[j] = v;
        mx = max(mx, v);
    }
    s_max[l] = mx;
    barrier();
    if (l == 0u) {
        for (uint i = 1u; i < 64u; ++i) mx = max(mx, s_max[i]);
        s_max[0] = mx;
    }
    barrier();
    mx = s_max[0];
    for (uint j = l; j < n; j += 64u) {
        precise float d = sc.v[j] - mx;
        sc.v[j] = det_exp(d);
    }
    memoryBarrierBuffer();
    barrier();
    if (l == 0u) {
        precise double sum = 0.0;
        for (uint j = 0u; j < n; ++j) sum = sum + double(sc.v[j]);
        s_sum = sum;
    }
    barrier();
    const double sum = s_sum;
    for (uint j = l; j < n; j += 64u) sc.v[j] = d2f(ddiv_rn(double(sc.v[j]), sum));
    memoryBarrierBuffer();
    barrier();
    const uint64_t outp = pc.p.dst + (uint64_t(t) * pc.p.H + h) * pc.p.Dv * 4u;
    for (uint i = l; i < pc.p.Dv; i += 64u) {
        precise float o = 0.0;
        for (uint j = 0u; j < n; ++j) {
            const int kp = k0 + int(j);
            const uint64_t vrow = pc.p.v + uint64_t(s * R + kp % R) * pc.p.v_nb1;
            o = fma_rn(sc.v[j], dequant_elem(pc.p.vtype, vrow, hk * pc.p.Dv + i), o);
        }
        F32(outp).v[i] = o;
    }
}
