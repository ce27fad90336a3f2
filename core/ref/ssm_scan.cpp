// The definition of ssm_scan (Mamba-2's selective scan, SEMANTICS.md section 2), the plain
// recurrence. Per run, per head h (group g = h / (H / G)), starting from the slot's state
// (zeros on reset), for each token in order, for each channel p of the head:
//   a = det_exp(dt_h * A_h);  u = dt_h * x_p
//   S_p[n] = S_p[n] * a + u * B_g[n]   (two products, each rounded, then the sum: no fusing)
//   y_p = canon_dot(S_p, C_g, N)
// and the final S is stored back. Every operation is one float operation or canon_dot
// (core/rules/canon.h), so any backend can reproduce the bits.
#include "core/ir/op_params.h"
#include "core/ref/ref_ops.h"
#include "core/rules/canon.h"
#include "core/rules/scan_runs.h"

namespace ls::ref {

void ssm_scan(const Tensor& dst) {
    const Tensor& xbc = *dst.src[0];
    const Tensor& dt = *dst.src[1];
    const float* A = dst.src[2]->data_as<const float>();
    const Tensor& state = *dst.src[3];
    const auto p = dst.get_params<SsmScanParams>();
    const int64_t T = xbc.nrows(), H = p.n_head, P = p.head_dim, N = p.d_state, G = p.n_group;
    const int32_t* order = dst.src[5]->data_as<const int32_t>();
    const auto runs = read_scan_runs(dst.src[4]->data_as<const int32_t>(), dst.src[4]->ne[1], order, T, state.ne[1], "ssm_scan");
    for (const ScanRun& r : runs) {
        float* S_slot = reinterpret_cast<float*>(state.row(r.slot));
        for (int64_t h = 0; h < H; ++h) {
            const int64_t grp = h / (H / G);
            float* S = S_slot + h * P * N;
            if (r.reset)
                for (int64_t j = 0; j < P * N; ++j) S[j] = 0.0f;
            for (int64_t t = 0; t < r.n; ++t) {
                const int64_t tok = order[r.first + t];
                const float* row = reinterpret_cast<const float*>(xbc.row(tok));
                const float* B = row + H * P + grp * N;
                const float* C = row + H * P + G * N + grp * N;
                const float d = reinterpret_cast<const float*>(dt.row(tok))[h];
                const float a = det_exp(d * A[h]);
                float* out = reinterpret_cast<float*>(dst.row(h, tok));
                for (int64_t c = 0; c < P; ++c) {
                    const float u = d * row[h * P + c];
                    float* Sp = S + c * N;
                    for (int64_t n = 0; n < N; ++n) {
                        const float s = Sp[n] * a, b = u * B[n];
                        Sp[n] = s + b;
                    }
                    out[c] = canon_dot(Sp, C, N);
                }
            }
        }
    }
}

}  // namespace ls::ref
