// conv1d_scan on the CPU: the reference arithmetic (core/ref/conv1d_scan.cpp), parallel over
// (run, channel block), vectorized across channels. Each channel of a run is independent: its window slides over the run's
// tokens, and its K-1 state values are read at the start and written at the end, in place.
#include <tbb/parallel_for.h>

#include <algorithm>

#include "core/ir/op_params.h"
#include "core/rules/scan_runs.h"
#include "cpu/ops/cpu_ops.h"
#include "cpu/simd.h"

namespace ls::cpu {

void conv1d_scan(const Tensor& dst) {
    const Tensor& x = *dst.src[0];
    const float* w = dst.src[1]->data_as<const float>();
    const Tensor& state = *dst.src[2];
    const int64_t C = x.ne[0], T = x.ne[1], K = dst.get_params<Conv1dScanParams>().d_conv;
    const int32_t* order = dst.src[4]->data_as<const int32_t>();
    const auto runs = read_scan_runs(dst.src[3]->data_as<const int32_t>(), dst.src[3]->ne[1], order, T, state.ne[1], "conv1d_scan");
    constexpr int64_t kMaxK = 16;
    if (K > kMaxK) throw std::invalid_argument("conv1d_scan: the CPU kernel handles kernels up to 16 wide");
    // Channels per task: about 16k multiply-adds of work each. A decode step (runs of one
    // token) in blocks of 64 channels was hundreds of tasks too small to pay for their
    // scheduling (4 sequences: 3.7x one sequence's time).
    int64_t longest = 1;
    for (const ScanRun& r : runs) longest = std::max<int64_t>(longest, r.n);
    const int64_t kBlock = std::clamp<int64_t>((int64_t(16384) / (longest * K)) / 64 * 64, 64, std::max<int64_t>(C, 64));
    const int64_t n_blocks = (C + kBlock - 1) / kBlock;
    tbb::parallel_for(int64_t(0), int64_t(runs.size()) * n_blocks, [&](int64_t job) {
        const ScanRun& r = runs[size_t(job / n_blocks)];
        const int64_t c0 = (job % n_blocks) * kBlock, c1 = std::min(C, c0 + kBlock);
        float* st = reinterpret_cast<float*>(state.row(r.slot));
        int64_t c = c0;
        // simd::W channels at a time, lane l = channel c + l, each lane the scalar chain below.
        for (; c + simd::W <= c1; c += simd::W) {
            using B = simd::fbatch;
            alignas(64) float wt[kMaxK][simd::W];  // tap k of the W channels
            for (int64_t l = 0; l < simd::W; ++l)
                for (int64_t k = 0; k < K; ++k) wt[k][l] = w[(c + l) * K + k];
            B win[kMaxK], wk[kMaxK];
            for (int64_t k = 0; k < K; ++k) wk[k] = B::load_aligned(wt[k]);
            for (int64_t k = 0; k < K - 1; ++k) win[k] = r.reset ? B(0.0f) : B::load_unaligned(st + k * C + c);
            for (int64_t t = 0; t < r.n; ++t) {
                const int64_t tok = order[r.first + t];
                win[K - 1] = B::load_unaligned(reinterpret_cast<const float*>(x.row(tok)) + c);
                B acc(0.0f);
                for (int64_t k = 0; k < K; ++k) acc = acc + wk[k] * win[k];
                acc.store_unaligned(reinterpret_cast<float*>(dst.row(tok)) + c);
                for (int64_t k = 0; k < K - 1; ++k) win[k] = win[k + 1];
            }
            for (int64_t k = 0; k < K - 1; ++k) win[k].store_unaligned(st + k * C + c);
        }
        for (; c < c1; ++c) {
            float win[kMaxK];  // the last K inputs of channel c, oldest first
            for (int64_t k = 0; k < K - 1; ++k) win[k] = r.reset ? 0.0f : st[k * C + c];
            const float* wc = w + c * K;
            for (int64_t t = 0; t < r.n; ++t) {
                const int64_t tok = order[r.first + t];
                win[K - 1] = reinterpret_cast<const float*>(x.row(tok))[c];
                float acc = 0.0f;
                for (int64_t k = 0; k < K; ++k) acc += wc[k] * win[k];
                reinterpret_cast<float*>(dst.row(tok))[c] = acc;
                for (int64_t k = 0; k < K - 1; ++k) win[k] = win[k + 1];
            }
            for (int64_t k = 0; k < K - 1; ++k) st[k * C + c] = win[k];
        }
    });
}

}  // namespace ls::cpu
