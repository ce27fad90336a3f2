// attention, the query-tile form (core/ref/attention.cpp, core/rules/attention_rule.h; the
// same bits as attention.comp): one workgroup per head and tile of 64 consecutive queries of
// one sequence (the host checked each tile's sequence), invocation l = query. Every key and
// value row of the tile's blocks is read once and used by all its queries, and each query's
// q, block scores and outputs stay in the invocation's own registers. That is the shape for
// devices that run a workgroup as SIMD lanes of a CPU thread (lavapipe), where each memory
// access is a loop over the lanes: attention.comp spends two such accesses per multiply-add
// of a score (k and q), this form half of one. The host picks it there for prompt ubatches
// with head sizes up to MAXD (backends/vulkan/ops/attention.cpp).
// Per query and block b (keys lo..hi of the block that it sees), exactly the rule:
//  - pass 1: s_k = canon_dot(q, k_k) * scale (soft-capped when asked): 32 partials over the
//    elements in increasing order, then the fixed tree; m_b = max s_k;
//  - pass 2: p_k = det_exp(s_k - m_b), l_b and o_b[i] summed in key order from +0;
//  - the first block the query sees is the running state, later ones attn_fold into it;
//    with sinks (address != 0) the head's sink logit folds in last (attn_fold_sink);
//    out[i] = o[i] / l, correctly rounded.
// variant: attention_tile_f32 KVTYPE=LS_TYPE_F32
// variant: attention_tile_f16 KVTYPE=LS_TYPE_F16
// variant: attention_tile_bf16 KVTYPE=LS_TYPE_BF16
// variant: attention_tile_q8_0 KVTYPE=LS_TYPE_Q8_0
// variant: attention_tile_q4_0 KVTYPE=LS_TYPE_Q4_0
#version 450
#extension GL_GOOGLE_include_directive : require
#include "shaders/common.glsl"
layout(local_size_x = 64) in;
layout(push_constant, std430) uniform Pc { PcAttention p; } pc;

const uint BLOCK = 64u;  // kAttnBlock
const uint TILE = 64u;   // queries per workgroup
const uint MAXD = 256u;  // Dk and Dv at most for this form (the host checks)

shared float s_sc[BLOCK * TILE];  // [key of the block][query]
shared int s_lo[TILE], s_hi[TILE];

// Elements e and e + 1 (e even) of a K or V row: 16-bit types as one word (the host uses this
// form for even head sizes on 4-byte aligned rows only).
vec2 load_pair(addr_t row, uint e) {
#if KVTYPE == LS_TYPE_F16 || KVTYPE == LS_TYPE_BF16
    const uint w = U32(row).v[e / 2u];
#if KVTYPE == LS_TYPE_F16
    return vec2(h2f(w & 0xFFFFu), h2f(w >> 16));
#else
    return vec2(bf2f(w & 0xFFFFu), bf2f(w >> 16));
#endif
#else
    return vec2(dequant_elem(KVTYPE, row, e), dequant_elem(KVTYPE, row, e + 1u));
#endif
}

void main() {
    const uint l = gl_LocalInvocationID.x;
    const uint H = pc.p.H, Dk = pc.p.Dk, Dv = pc.p.Dv;
    const uint h = gl_WorkGroupID.x, t0 = gl_WorkGroupID.y * TILE, t = t0 + l;
    const bool live = t < pc.p.T;
    const int W = pc.p.p.window, R = pc.p.p.ring_rows;
    const int s = I32(pc.p.seq).v[t0];  // every query of the tile has this sequence
    const int pt = live ? I32(pc.p.pos).v[t] : -1;
    const int k0 = !live ? 0 : attn_first(pc.p.pos, t, pc.p.T, pt, W);
    const uint hk = h / (H / uint(pc.p.p.n_head_kv));
    // The tile's keys: the union of its queries' ranges.
    s_lo[l] = live ? k0 : 0x7FFFFFFF;
    s_hi[l] = pt;
    barrier();
    int kmin = 0x7FFFFFFF, kmax = -1;
    for (uint j = 0u; j < TILE; ++j) {
        kmin = min(kmin, s_lo[j]);
        kmax = max(kmax, s_hi[j]);
    }

    float q[MAXD];
    const addr_t qa = addr_mad(addr_mad(pc.p.q, h, pc.p.q_nb1), live ? t : t0, pc.p.q_nb2);
    [[unroll]] for (uint i = 0u; i < MAXD; ++i) q[i] = i < Dk ? F32(qa).v[i] : 0.0;

    bool started = false;
    float m = 0.0, lsum = 0.0;
    float o[MAXD];
    [[unroll]] for (uint i = 0u; i < MAXD; ++i) o[i] = 0.0;
    for (int b = kmin / int(BLOCK); b <= kmax / int(BLOCK); ++b) {
        const int blo = max(kmin, b * int(BLOCK)), bhi = min(kmax, b * int(BLOCK) + int(BLOCK) - 1);
        const int lo = max(k0, b * int(BLOCK)), hi = min(pt, b * int(BLOCK) + int(BLOCK) - 1);
        float mb = uintBitsToFloat(0xFF800000u);
        for (int kp = blo; kp <= bhi; ++kp) {
            const addr_t krow = addr_mad(pc.p.k, uint(s * R + kp % R), pc.p.k_nb1);
            float part[32];
            [[unroll]] for (uint j = 0u; j < 32u; ++j) part[j] = 0.0;
            [[unroll]] for (uint i = 0u; i < MAXD; i += 2u)
                if (i < Dk) {
                    const vec2 kk = load_pair(krow, hk * Dk + i);
                    precise float a0 = part[i % 32u] + q[i] * kk.x;
                    part[i % 32u] = a0;
                    precise float a1 = part[(i + 1u) % 32u] + q[i + 1u] * kk.y;
                    part[(i + 1u) % 32u] = a1;
                }
            precise float sc = canon_tree(part) * pc.p.p.scale;
            if (pc.p.p.softcap > 0.0) sc = pc.p.p.softcap * det_tanh(canon_div(sc, pc.p.p.softcap));
            s_sc[uint(kp - b * int(BLOCK)) * TILE + l] = sc;
            if (kp >= lo && kp <= hi) mb = canon_fmax(mb, sc);
        }
        precise float lb = 0.0;
        float ob[MAXD];
        [[unroll]] for (uint i = 0u; i < MAXD; ++i) ob[i] = 0.0;
        for (int kp = blo; kp <= bhi; ++kp) {
            const addr_t vrow = addr_mad(pc.p.v, uint(s * R + kp % R), pc.p.v_nb1);
            if (kp >= lo && kp <= hi) {
                precise float d = s_sc[uint(kp - b * int(BLOCK)) * TILE + l] - mb;
                const float pk = det_exp(d);
                lb = lb + pk;
                [[unroll]] for (uint i = 0u; i < MAXD; i += 2u)
                    if (i < Dv) {
                        const vec2 vv = load_pair(vrow, hk * Dv + i);
                        precise float a0 = ob[i] + pk * vv.x;
                        ob[i] = a0;
                        precise float a1 = ob[i + 1u] + pk * vv.y;
                        ob[i + 1u] = a1;
                    }
            }
        }
        if (lo <= hi) {  // the query sees this block
            if (!started) {
                m = mb;
                lsum = lb;
                [[unroll]] for (uint i = 0u; i < MAXD; ++i) o[i] = ob[i];
                started = true;
            } else {  // attn_fold
                const float mn = canon_fmax(m, mb);
                precise float da = m - mn, dc = mb - mn;
                const float a = det_exp(da), cc = det_exp(dc);
                precise float nl = lsum * a + lb * cc;
                lsum = nl;
                [[unroll]] for (uint i = 0u; i < MAXD; ++i) {
                    precise float no = o[i] * a + ob[i] * cc;
                    o[i] = no;
                }
                m = mn;
            }
        }
    }
    if ((pc.p.sinks.x | pc.p.sinks.y) != 0u) {  // attn_fold_sink: the head's sink logit
        const float sk = F32(pc.p.sinks).v[h];
        const float mn = canon_fmax(m, sk);
        precise float da = m - mn, dc = sk - mn;
        const float a = det_exp(da), cc = det_exp(dc);
        precise float nl = lsum * a + cc;
        lsum = nl;
        [[unroll]] for (uint c = 0u; c < MAXD; ++c) {
            precise float no = o[c] * a;
            o[c] = no;
        }
    }
    if (!live) return;
    const addr_t outp = addr_mad(pc.p.dst, t * H + h, Dv * 4u);
    [[unroll]] for (uint i = 0u; i < MAXD; ++i)
        if (i < Dv) F32(outp).v[i] = canon_div(o[i], lsum);
}
