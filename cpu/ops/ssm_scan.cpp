// ssm_scan on the CPU: the reference recurrence (core/ref/ssm_scan.cpp), parallel over
// (run, head); each task keeps its head's state in place in the slot's memory and scans the
// run's tokens in order. The state update is elementwise in xsimd batches (a product rounded,
// a product rounded, their sum rounded: no fused multiply-add), the output canon_dot: the same
// bits for any batching.
#include <tbb/parallel_for.h>

#include <algorithm>
#include <vector>

#include "core/ir/op_params.h"
#include "core/rules/canon.h"
#include "core/rules/scan_runs.h"
#include "cpu/ops/cpu_ops.h"
#include "cpu/simd.h"

namespace ls::cpu {

void ssm_scan(const Tensor& dst) {
    const Tensor& xbc = *dst.src[0];
    const Tensor& dt = *dst.src[1];
    const float* A = dst.src[2]->data_as<const float>();
    const Tensor& state = *dst.src[3];
    const auto p = dst.get_params<SsmScanParams>();
    const int64_t T = xbc.nrows(), H = p.n_head, P = p.head_dim, N = p.d_state, G = p.n_group;
    const int32_t* order = dst.src[5]->data_as<const int32_t>();
    const std::vector<ScanRun> runs =
        read_scan_runs(dst.src[4]->data_as<const int32_t>(), dst.src[4]->ne[1], order, T, state.ne[1], "ssm_scan");
    tbb::parallel_for(int64_t(0), int64_t(runs.size()) * H, [&](int64_t job) {
        const ScanRun& r = runs[size_t(job / H)];
        const int64_t h = job % H, grp = h / (H / G);
        float* S = reinterpret_cast<float*>(state.row(r.slot)) + h * P * N;
        if (r.reset) std::fill(S, S + P * N, 0.0f);
        for (int64_t t = 0; t < r.n; ++t) {
            const int64_t tok = order[r.first + t];
            const float* row = reinterpret_cast<const float*>(xbc.row(tok));
            const float* B = row + H * P + grp * N;
            const float* C = row + H * P + G * N + grp * N;
            const float d = reinterpret_cast<const float*>(dt.row(tok))[h];
            const float a = det_exp(d * A[h]);
            const simd::fbatch va(a);
            float* out = reinterpret_cast<float*>(dst.row(h, tok));
            for (int64_t c = 0; c < P; ++c) {
                const float u = d * row[h * P + c];
                const simd::fbatch vu(u);
                float* Sp = S + c * N;
                int64_t n = 0;
                for (; n + simd::W <= N; n += simd::W) {
                    const simd::fbatch s = simd::fbatch::load_unaligned(Sp + n) * va, b = vu * simd::fbatch::load_unaligned(B + n);
                    (s + b).store_unaligned(Sp + n);
                }
                for (; n < N; ++n) {
                    const float s = Sp[n] * a, b = u * B[n];
                    Sp[n] = s + b;
                }
                out[c] = simd::canon_dot(Sp, C, N);
            }
        }
    });
}

}  // namespace ls::cpu
