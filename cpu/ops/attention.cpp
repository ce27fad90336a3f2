#include <tbb/parallel_for.h>

#include <cmath>
#include <vector>

#include "core/attention_rule.h"
#include "core/op_params.h"
#include "cpu/ops/cpu_ops.h"
#include "cpu/quant_dot.h"
#include "cpu/simd.h"

namespace ls::cpu {
namespace {

constexpr int64_t kQueryBlock = 16;

// The K/V rows of key positions [lo, hi] of one slot and kv head, dequantized once and
// shared by a block of queries. Rows are fetched by position through the ring rule; a
// position whose row was since overwritten is never read by a query it is visible to
// (that is the ring's headroom guarantee), so the copy is as good as the cache.
struct KeyBlock {
    int64_t lo = 0, hi = -1;
    std::vector<double> k;  // widened once here, so scores need no conversions (det_dot)
    std::vector<float> v;
    void load(const Tensor& kt, const Tensor& vt, int64_t s, int64_t R, int64_t hk, int64_t Dk, int64_t Dv) {
        const int64_t n = hi - lo + 1;
        k.resize(size_t(n * Dk));
        v.resize(size_t(n * Dv));
        std::vector<float> row(std::max(kt.ne[0], vt.ne[0]));
        for (int64_t kp = lo; kp <= hi; ++kp) {
            const int64_t r = ring_row(s, kp, R);
            dequantize_row_fast(kt.type, kt.row(r), row.data(), kt.ne[0]);
            for (int64_t i = 0; i < Dk; ++i) k[size_t((kp - lo) * Dk + i)] = row[size_t(hk * Dk + i)];
            dequantize_row_fast(vt.type, vt.row(r), row.data(), vt.ne[0]);
            std::copy(row.begin() + hk * Dv, row.begin() + (hk + 1) * Dv, v.begin() + (kp - lo) * Dv);
        }
    }
};

}  // namespace

// Tasks are (block of up to 16 consecutive tokens, kv head). Visibility and ring rows come
// from core/attention_rule.h, as in the reference.
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
    const int64_t n_blocks = (T + kQueryBlock - 1) / kQueryBlock;
    tbb::parallel_for(int64_t(0), n_blocks * Hkv, [&](int64_t task) {
        const int64_t t0 = (task / Hkv) * kQueryBlock, t1 = std::min(T, t0 + kQueryBlock), hk = task % Hkv;
        KeyBlock kb;
        std::vector<float> scores;
        std::vector<double> qd(static_cast<size_t>(Dk));
        for (int64_t t = t0; t < t1; ++t) {
            const int64_t s = seq[t], pt = pos[t], k0 = attn_first_key(pt, p.window);
            // Reload the shared rows when this query's keys are not all in the block (another
            // sequence, or positions that are not increasing).
            if (t == t0 || seq[t] != seq[t - 1] || k0 < kb.lo || pt > kb.hi) {
                kb.lo = k0;
                kb.hi = pt;
                for (int64_t u = t + 1; u < t1 && seq[u] == s; ++u) kb.hi = std::max<int64_t>(kb.hi, pos[u]);
                kb.load(k, v, s, R, hk, Dk, Dv);
            }
            const int64_t n = pt - k0 + 1;
            scores.resize(size_t(n));
            for (int64_t g = 0; g < group; ++g) {
                const int64_t h = hk * group + g;
                const float* qh = reinterpret_cast<const float*>(q.row(h, t));
                for (int64_t i = 0; i < Dk; ++i) qd[size_t(i)] = qh[i];
                float mx = -INFINITY;
                for (int64_t j = 0; j < n; ++j) {
                    float sc = float(simd::dot_f64(qd.data(), kb.k.data() + (k0 - kb.lo + j) * Dk, Dk)) * p.scale;
                    if (p.softcap > 0) sc = p.softcap * det_tanh(sc / p.softcap);
                    scores[j] = sc;
                    mx = std::fmax(mx, sc);
                }
                double sum = 0;
                int64_t j = 0;
                for (const simd::fbatch vmx(mx); j + simd::W <= n; j += simd::W)
                    simd::det_exp(simd::fbatch::load_unaligned(&scores[j]) - vmx).store_unaligned(&scores[j]);
                for (; j < n; ++j) scores[j] = det_exp(scores[j] - mx);
                for (j = 0; j < n; ++j) sum += scores[j];  // in order, as the reference
                float* out = reinterpret_cast<float*>(dst.row(h, t));
                std::fill(out, out + Dv, 0.0f);
                for (int64_t j = 0; j < n; ++j)
                    simd::fma_axpy(float(double(scores[j]) / sum), kb.v.data() + (k0 - kb.lo + j) * Dv, out, Dv);
            }
        }
    });
}

}  // namespace ls::cpu
