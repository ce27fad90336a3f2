// conv1d_scan (core/ref/conv1d_scan.cpp, SEMANTICS.md section 2): one invocation per
// (run, channel). A window of the last K inputs slides over the run's tokens in scan order;
// the slot's state (the K-1 inputs before the run) is read at the start, zeros on reset, and
// written back at the end, in place. Each output is the reference's chain
// acc = acc + w[k] * win[k], k = 0..K-1, with no fused operations. The host validated the
// run table before recording.
#version 450
#extension GL_GOOGLE_include_directive : require
#include "shaders/common.glsl"
layout(local_size_x = 64) in;
layout(push_constant, std430) uniform Pc { PcConv1dScan p; } pc;

const uint MAX_K = 16u;  // supports() refuses wider kernels

void main() {
    const uint id = gl_GlobalInvocationID.x + gl_GlobalInvocationID.y * gl_NumWorkGroups.x * 64u;
    const uint C = pc.p.C, K = pc.p.K;
    if (id >= pc.p.n_runs * C) return;
    const uint ri = id / C, c = id % C;
    const int slot = I32(pc.p.runs).v[4u * ri], first = I32(pc.p.runs).v[4u * ri + 1u];
    const int n = I32(pc.p.runs).v[4u * ri + 2u], reset = I32(pc.p.runs).v[4u * ri + 3u];
    const addr_t st = addr_mad(pc.p.state, uint(slot), pc.p.st_nb1);
    float win[MAX_K];
    for (uint k = 0u; k + 1u < K; ++k) win[k] = reset != 0 ? 0.0 : F32(st).v[k * C + c];
    for (int t = 0; t < n; ++t) {
        const uint tok = uint(I32(pc.p.order).v[first + t]);
        win[K - 1u] = F32(addr_mad(pc.p.x, tok, pc.p.x_nb1)).v[c];
        precise float acc = 0.0;
        for (uint k = 0u; k < K; ++k) {
            precise float prod = F32(pc.p.w).v[c * K + k] * win[k];
            acc = acc + prod;
        }
        F32(addr_mad(pc.p.y, tok, pc.p.y_nb1)).v[c] = acc;
        for (uint k = 0u; k + 1u < K; ++k) win[k] = win[k + 1u];
    }
    for (uint k = 0u; k + 1u < K; ++k) F32(st).v[k * C + c] = win[k];
}
