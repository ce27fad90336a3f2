// The definition of delta_scan (SEMANTICS.md section 2), the plain recurrence. Per run, per
// value head h (key head by DeltaHeadMap), starting from the slot's state (zeros on reset),
// for each token in order:
//   k = k / sqrt(sum k^2 + eps),  q = (q / sqrt(sum q^2 + eps)) * scale
//   for each row i of S (Dv rows of Dk):  S_i = e^g S_i;  u = beta (v_i - S_i.k);
//                                         S_i += u k;      o_i = S_i.q
// and the final S is stored back. Dot products are canon_dot (core/rules/canon.h); every
// other operation is one float operation, so any backend can reproduce the bits.
#include <cmath>
#include <vector>

#include "core/rules/canon.h"
#include "core/ir/op_params.h"
#include "core/ref/ref_ops.h"
#include "core/rules/scan_runs.h"

namespace ls::ref {

void delta_scan(const Tensor& dst) {
    const Tensor& qkv = *dst.src[0];
    const Tensor& g = *dst.src[1];
    const Tensor& beta = *dst.src[2];
    const Tensor& state = *dst.src[3];
    const auto p = dst.get_params<DeltaScanParams>();
    const int64_t T = qkv.nrows(), Hk = p.n_k_heads, Dk = p.d_k, Hv = p.n_v_heads, Dv = p.d_v;
    const int32_t* order = dst.src[5]->data_as<const int32_t>();
    const auto runs = read_scan_runs(dst.src[4]->data_as<const int32_t>(), dst.src[4]->ne[1], order, T, state.ne[1], "delta_scan");
    std::vector<float> qn(static_cast<size_t>(Dk)), kn(static_cast<size_t>(Dk));
    for (const ScanRun& r : runs) {
        float* S_slot = reinterpret_cast<float*>(state.row(r.slot));
        for (int64_t h = 0; h < Hv; ++h) {
            const int64_t hk = p.head_map == HEADS_TILED ? h % Hk : h / (Hv / Hk);
            float* S = S_slot + h * Dv * Dk;
            if (r.reset)
                for (int64_t j = 0; j < Dv * Dk; ++j) S[j] = 0.0f;
            for (int64_t t = 0; t < r.n; ++t) {
                const int64_t tok = order[r.first + t];
                const float* row = reinterpret_cast<const float*>(qkv.row(tok));
                const float* q = row + hk * Dk;
                const float* k = row + Hk * Dk + hk * Dk;
                const float* v = row + 2 * Hk * Dk + h * Dv;
                const float rq = canon_div(1.0f, canon_sqrt(canon_dot(q, q, Dk) + p.eps));
                const float rk = canon_div(1.0f, canon_sqrt(canon_dot(k, k, Dk) + p.eps));
                for (int64_t j = 0; j < Dk; ++j) {
                    qn[size_t(j)] = q[j] * rq * p.scale;
                    kn[size_t(j)] = k[j] * rk;
                }
                const float decay = det_exp(reinterpret_cast<const float*>(g.row(tok))[h]);
                const float b = reinterpret_cast<const float*>(beta.row(tok))[h];
                float* out = reinterpret_cast<float*>(dst.row(h, tok));
                for (int64_t i = 0; i < Dv; ++i) {
                    float* Si = S + i * Dk;
                    for (int64_t j = 0; j < Dk; ++j) Si[j] = Si[j] * decay;
                    const float u = (v[i] - canon_dot(Si, kn.data(), Dk)) * b;
                    for (int64_t j = 0; j < Dk; ++j) Si[j] = Si[j] + u * kn[size_t(j)];
                    out[i] = canon_dot(Si, qn.data(), Dk);
                }
            }
        }
    }
}

}  // namespace ls::ref
