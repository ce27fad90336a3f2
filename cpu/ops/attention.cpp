#include <tbb/parallel_for.h>

#include <cmath>
#include <vector>

#include "core/attention_rule.h"
#include "core/op_params.h"
#include "cpu/ops/cpu_ops.h"
#include "cpu/quant_dot.h"
#include "cpu/simd.h"

namespace ls::cpu {

// One task per (token, kv head): the cache rows a query group reads are dequantized once
// and shared by the group's heads. Visibility and ring rows come from core/attention_rule.h.
void attention(const Tensor& dst) {
    const Tensor& q = *dst.src[0];
    const Tensor& k = *dst.src[1];
    const Tensor& v = *dst.src[2];
    const int32_t* pos = dst.src[3]->data_as<const int32_t>();
    const int32_t* seq = dst.src[4]->data_as<const int32_t>();
    const AttentionParams p = dst.get_params<AttentionParams>();
    const int64_t Dk = q.ne[0], H = q.ne[1], T = q.ne[2], Dv = dst.ne[0];
    const int64_t R = p.ring_rows, n_seq = k.ne[1] / R, Hkv = p.n_head_kv, group = H / Hkv;
    for (int64_t t = 0; t < T; ++t) check_attention_query(seq[t], pos[t], p.window, R, n_seq);
    tbb::parallel_for(int64_t(0), T * Hkv, [&](int64_t task) {
        const int64_t t = task / Hkv, hk = task % Hkv;
        const int64_t s = seq[t], pt = pos[t], k0 = attn_first_key(pt, p.window), n = pt - k0 + 1;
        std::vector<float> krow(k.ne[0]), vrow(v.ne[0]), scores(size_t(n * group));
        std::vector<float> mx(group, -INFINITY);
        for (int64_t kp = k0; kp <= pt; ++kp) {
            dequantize_row_fast(k.type, k.row(ring_row(s, kp, R)), krow.data(), k.ne[0]);
            for (int64_t g = 0; g < group; ++g) {
                const float* qh = reinterpret_cast<const float*>(q.row(hk * group + g, t));
                float sc = simd::dot(qh, krow.data() + hk * Dk, Dk) * p.scale;
                if (p.softcap > 0) sc = p.softcap * std::tanh(sc / p.softcap);
                scores[g * n + (kp - k0)] = sc;
                mx[g] = std::fmax(mx[g], sc);
            }
        }
        std::vector<double> sum(group, 0.0);
        for (int64_t g = 0; g < group; ++g)
            for (int64_t j = 0; j < n; ++j) sum[g] += (scores[g * n + j] = std::exp(scores[g * n + j] - mx[g]));
        for (int64_t g = 0; g < group; ++g) {
            float* out = reinterpret_cast<float*>(dst.row(hk * group + g, t));
            std::fill(out, out + Dv, 0.0f);
        }
        for (int64_t kp = k0; kp <= pt; ++kp) {
            dequantize_row_fast(v.type, v.row(ring_row(s, kp, R)), vrow.data(), v.ne[0]);
            for (int64_t g = 0; g < group; ++g) {
                float* out = reinterpret_cast<float*>(dst.row(hk * group + g, t));
                simd::axpy(float(scores[g * n + (kp - k0)] / sum[g]), vrow.data() + hk * Dv, out, Dv);
            }
        }
    });
}

}  // namespace ls::cpu
