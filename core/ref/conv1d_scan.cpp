// The definition of conv1d_scan (SEMANTICS.md section 2): per run, the slot's last K-1 inputs
// (zeros on reset) followed by the run's tokens form the input window; each output sums
// w[k] * in[k] for k = 0..K-1 in that order, in float, from 0; the state becomes the last K-1
// inputs of the window.
#include <vector>

#include "core/ir/op_params.h"
#include "core/ref/ref_ops.h"
#include "core/rules/scan_runs.h"

namespace ls::ref {

void conv1d_scan(const Tensor& dst) {
    const Tensor& x = *dst.src[0];
    const float* w = dst.src[1]->data_as<const float>();
    const Tensor& state = *dst.src[2];
    const int64_t C = x.ne[0], T = x.ne[1], K = dst.get_params<Conv1dScanParams>().d_conv;
    const int32_t* order = dst.src[4]->data_as<const int32_t>();
    const auto runs = read_scan_runs(dst.src[3]->data_as<const int32_t>(), dst.src[3]->ne[1], order, T, state.ne[1], "conv1d_scan");
    for (const ScanRun& r : runs) {
        float* st = reinterpret_cast<float*>(state.row(r.slot));  // [K-1][C], oldest first
        std::vector<float> win(size_t((K - 1 + r.n) * C));
        for (int64_t j = 0; j < (K - 1) * C; ++j) win[size_t(j)] = r.reset ? 0.0f : st[j];
        for (int64_t t = 0; t < r.n; ++t) {
            const float* px = reinterpret_cast<const float*>(x.row(order[r.first + t]));
            for (int64_t c = 0; c < C; ++c) win[size_t((K - 1 + t) * C + c)] = px[c];
        }
        for (int64_t t = 0; t < r.n; ++t) {
            float* py = reinterpret_cast<float*>(dst.row(order[r.first + t]));
            for (int64_t c = 0; c < C; ++c) {
                float acc = 0.0f;
                for (int64_t k = 0; k < K; ++k) acc += w[c * K + k] * win[size_t((t + k) * C + c)];
                py[c] = acc;
            }
        }
        for (int64_t j = 0; j < (K - 1) * C; ++j) st[j] = win[size_t(r.n * C + j)];
    }
}

}  // namespace ls::ref
