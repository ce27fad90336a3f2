// attention over a ring-buffered KV cache (core/ref/attention.cpp, SEMANTICS.md section 1,
// core/rules/attention_rule.h): query (s, p) reads keys max(0, p-W+1)..p of its slot, key k
// at row s*R + k mod R, cut into blocks of 64 absolute positions. One workgroup of 64
// invocations per (query, head) block range:
//  - invocation j scores the block's key j: canon_dot(q, k) with its 32 partial sums over
//    q in shared memory, then the fixed tree (the reference's order exactly), times scale,
//    soft-capped when asked;
//  - every invocation takes the block's max and the sum l_b of p_k = det_exp(s_k - m_b) in
//    key order from shared memory (the same values everywhere), and owns the output
//    elements i = l, l + 64, ...: o_b[i] summed over the block's keys in order;
//  - split == 0: the workgroup walks the query's blocks in order and folds each into the
//    running state (attn_fold), then divides; split != 0 (decode: few queries, many keys):
//    the workgroup computes one block and writes its partial (m_b, l_b, o_b) to `part`, and
//    attention_fold.comp folds them in block order. A block's partial depends on that block
//    only, so both give the reference's bits.
//  - sinks (address != 0): the head's sink logit folds in after the last block
//    (attn_fold_sink), by this shader or, split, by the fold pass.
// The split form is part != 0 (shaders/push.h).
// K/V elements are read in their stored type and dequantized exactly (dequant_elem). The
// variants named for a cache type have K and V of that type compiled in: a run-time type
// test inside the key loops costs every branch of dequant_elem where a workgroup runs as SIMD
// lanes of a CPU thread (lavapipe executes both sides of a branch under a mask; pp64 attention
// 42 s -> 4 s). `attention` takes the types from the push constants (K and V of different
// types). The host checked every (seq, pos) before recording.
// variant: attention
// variant: attention_f32 KVTYPE=LS_TYPE_F32
// variant: attention_f16 KVTYPE=LS_TYPE_F16
// variant: attention_bf16 KVTYPE=LS_TYPE_BF16
// variant: attention_q8_0 KVTYPE=LS_TYPE_Q8_0
// variant: attention_q4_0 KVTYPE=LS_TYPE_Q4_0
#version 450
#extension GL_GOOGLE_include_directive : require
#include "shaders/common.glsl"
layout(local_size_x = 64) in;
#ifdef KVTYPE
#define KT KVTYPE
#define VT KVTYPE
#else
#define KT (pc.p.kvtype & 0xFFFFu)
#define VT (pc.p.kvtype >> 16)
#endif
layout(push_constant, std430) uniform Pc { PcAttention p; } pc;

const uint BLOCK = 64u;    // kAttnBlock
// Dk and Dv at most (supports_attention): 576 holds MLA's key (deepseek2: a 512-value latent
// and its 64-value rope part; V is the latent, 512), 512 Gemma 4's global heads.
const uint MAXDK = 576u;
const uint MAXDV = 512u;
const uint NV = MAXDV / 64u;

shared float s_q[MAXDK];
shared float s_sc[BLOCK];
shared float s_p[BLOCK];

void main() {
    const uint l = gl_LocalInvocationID.x;
    const uint H = pc.p.H, Dk = pc.p.Dk, Dv = pc.p.Dv;
    const bool split = (pc.p.part.x | pc.p.part.y) != 0u;
    const uint h = split ? gl_WorkGroupID.x % H : gl_WorkGroupID.x;
    const uint bi = split ? gl_WorkGroupID.x / H : 0u;
    const uint t = gl_WorkGroupID.y;
    const int W = pc.p.p.window, R = pc.p.p.ring_rows;
    const int s = I32(pc.p.seq).v[t], pt = I32(pc.p.pos).v[t];
    const int k0 = attn_first(pc.p.pos, t, pc.p.T, pt, W);
    const int b_first = k0 / int(BLOCK), b_last = pt / int(BLOCK);
    if (split && int(bi) > b_last - b_first) return;  // uniform over the workgroup
    const int b_lo = split ? b_first + int(bi) : b_first;
    const int b_hi = split ? b_lo : b_last;
    const uint hk = h / (H / uint(pc.p.p.n_head_kv));
    const addr_t q = addr_mad(addr_mad(pc.p.q, h, pc.p.q_nb1), t, pc.p.q_nb2);
    for (uint i = l; i < Dk; i += 64u) s_q[i] = F32(q).v[i];
    barrier();

    float m = 0.0, lsum = 0.0;
    float o[NV];
    [[unroll]] for (uint c = 0u; c < NV; ++c) o[c] = 0.0;
    for (int b = b_lo; b <= b_hi; ++b) {
        const int lo = max(k0, b * int(BLOCK)), hi = min(pt, b * int(BLOCK) + int(BLOCK) - 1);
        const uint nk = uint(hi - lo + 1);
        if (l < nk) {
            const int kp = lo + int(l);
            const addr_t krow = addr_mad(pc.p.k, uint(s * R + kp % R), pc.p.k_nb1);
            float part[32];
            [[unroll]] for (uint j = 0u; j < 32u; ++j) part[j] = 0.0;
            for (uint i0 = 0u; i0 < Dk; i0 += 32u)
                [[unroll]] for (uint j = 0u; j < 32u; ++j) {
                    const uint i = i0 + j;
                    if (i < Dk) {
                        precise float acc = part[j] + s_q[i] * dequant_elem(KT, krow, hk * Dk + i);
                        part[j] = acc;
                    }
                }
            precise float x = canon_tree(part) * pc.p.p.scale;
            if (pc.p.p.softcap > 0.0) x = pc.p.p.softcap * det_tanh(canon_div(x, pc.p.p.softcap));
            s_sc[l] = x;
        }
        barrier();
        float mb = uintBitsToFloat(0xFF800000u);
        for (uint j = 0u; j < nk; ++j) mb = canon_fmax(mb, s_sc[j]);
        if (l < nk) {
            precise float d = s_sc[l] - mb;
            s_p[l] = det_exp(d);
        }
        barrier();
        precise float lb = 0.0;
        for (uint j = 0u; j < nk; ++j) lb = lb + s_p[j];
        float ob[NV];
        [[unroll]] for (uint c = 0u; c < NV; ++c) ob[c] = 0.0;
        for (uint j = 0u; j < nk; ++j) {
            const int kp = lo + int(j);
            const addr_t vrow = addr_mad(pc.p.v, uint(s * R + kp % R), pc.p.v_nb1);
            const float pk = s_p[j];
            [[unroll]] for (uint c = 0u; c < NV; ++c) {
                const uint i = l + 64u * c;
                if (i < Dv) {
                    precise float acc = ob[c] + pk * dequant_elem(VT, vrow, hk * Dv + i);
                    ob[c] = acc;
                }
            }
        }
        if (b == b_lo) {
            m = mb;
            lsum = lb;
            [[unroll]] for (uint c = 0u; c < NV; ++c) o[c] = ob[c];
        } else {  // attn_fold
            const float mn = canon_fmax(m, mb);
            precise float da = m - mn, dc = mb - mn;
            const float a = det_exp(da), cc = det_exp(dc);
            precise float nl = lsum * a + lb * cc;
            lsum = nl;
            [[unroll]] for (uint c = 0u; c < NV; ++c) {
                precise float no = o[c] * a + ob[c] * cc;
                o[c] = no;
            }
            m = mn;
        }
        barrier();  // s_sc and s_p are rewritten by the next block
    }
    if (split) {
        const addr_t slot = addr_mad(pc.p.part, (t * H + h) * pc.p.nblk + bi, (Dv + 2u) * 4u);
        if (l == 0u) {
            F32(slot).v[0] = m;
            F32(slot).v[1] = lsum;
        }
        [[unroll]] for (uint c = 0u; c < NV; ++c)
            if (l + 64u * c < Dv) F32(slot).v[2u + l + 64u * c] = o[c];
        return;
    }
    if ((pc.p.sinks.x | pc.p.sinks.y) != 0u) {  // attn_fold_sink: the head's sink logit
        const float sk = F32(pc.p.sinks).v[h];
        const float mn = canon_fmax(m, sk);
        precise float da = m - mn, dc = sk - mn;
        const float a = det_exp(da), cc = det_exp(dc);
        precise float nl = lsum * a + cc;
        lsum = nl;
        [[unroll]] for (uint c = 0u; c < NV; ++c) {
            precise float no = o[c] * a;
            o[c] = no;
        }
    }
    const addr_t outp = addr_mad(pc.p.dst, t * H + h, Dv * 4u);
    [[unroll]] for (uint c = 0u; c < NV; ++c)
        if (l + 64u * c < Dv) F32(outp).v[l + 64u * c] = canon_div(o[c], lsum);
}
