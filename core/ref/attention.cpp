#include <algorithm>
#include <cmath>
#include <vector>

#include "core/rules/attention_rule.h"
#include "core/ir/op_params.h"
#include "core/ref/ref_ops.h"

namespace ls::ref {

// SEMANTICS.md section 1, directly: query (s, p) reads keys max(0, p-W+1)..p of its own
// slot (with W = kAttnFirstGiven, from the first key pos[T + t] given), key k at row
// s*R + k mod R. No mask tensor. The arithmetic is attention_rule.h's:
// per key block a partial from that block alone, partials folded in block order. With sinks
// (src[5], F32 [H]), head h's sink logit is one more fold after the last block
// (attn_fold_sink): the softmax denominator gains e^{sink_h} and the output no value.
void attention(const Tensor& dst) {
    const Tensor& q = *dst.src[0];
    const Tensor& k = *dst.src[1];
    const Tensor& v = *dst.src[2];
    const int32_t* pos = dst.src[3]->data_as<const int32_t>();
    const int32_t* seq = dst.src[4]->data_as<const int32_t>();
    const float* sinks = dst.src[5] ? dst.src[5]->data_as<const float>() : nullptr;
    const AttentionParams p = dst.get_params<AttentionParams>();
    const int64_t Dk = q.ne[0], H = q.ne[1], T = q.ne[2], Dv = dst.ne[0];
    const int64_t R = p.ring_rows, n_seq = k.ne[1] / R, group = H / p.n_head_kv;
    std::vector<float> krow(k.ne[0]), vrow(v.ne[0]), sc(kAttnBlock), ob(Dv);
    for (int64_t t = 0; t < T; ++t) check_attention_query(seq[t], pos[t], attn_first_of(pos, t, T, p.window), R, n_seq);
    for (int64_t t = 0; t < T; ++t) {
        const int64_t s = seq[t], pt = pos[t], k0 = attn_first_of(pos, t, T, p.window);
        for (int64_t h = 0; h < H; ++h) {
            const int64_t hk = h / group;
            const float* qh = reinterpret_cast<const float*>(q.row(h, t));
            float* out = reinterpret_cast<float*>(dst.row(h, t));
            float m = 0, l = 0;
            for (int64_t b = attn_block_of(k0); b <= attn_block_of(pt); ++b) {
                const int64_t lo = std::max(k0, b * kAttnBlock), hi = std::min(pt, b * kAttnBlock + kAttnBlock - 1);
                float mb = -INFINITY;
                for (int64_t kp = lo; kp <= hi; ++kp) {
                    row_to_f32(k.type, k.row(ring_row(s, kp, R)), krow.data(), k.ne[0]);
                    float x = canon_dot(qh, krow.data() + hk * Dk, Dk) * p.scale;
                    if (p.softcap > 0) x = p.softcap * det_tanh(canon_div(x, p.softcap));
                    sc[size_t(kp - lo)] = x;
                    mb = std::fmax(mb, x);
                }
                float lb = 0;
                for (int64_t i = 0; i < Dv; ++i) ob[size_t(i)] = 0;
                for (int64_t kp = lo; kp <= hi; ++kp) {
                    row_to_f32(v.type, v.row(ring_row(s, kp, R)), vrow.data(), v.ne[0]);
                    const float pk = det_exp(sc[size_t(kp - lo)] - mb);
                    lb = lb + pk;
                    for (int64_t i = 0; i < Dv; ++i) ob[size_t(i)] = ob[size_t(i)] + pk * vrow[size_t(hk * Dv + i)];
                }
                if (b == attn_block_of(k0)) {
                    m = mb, l = lb;
                    for (int64_t i = 0; i < Dv; ++i) out[i] = ob[size_t(i)];
                } else {
                    attn_fold(m, l, out, mb, lb, ob.data(), Dv);
                }
            }
            if (sinks) attn_fold_sink(m, l, out, sinks[h], Dv);
            for (int64_t i = 0; i < Dv; ++i) out[i] = canon_div(out[i], l);
        }
    }
}

}  // namespace ls::ref
