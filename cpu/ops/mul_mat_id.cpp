#include <tbb/blocked_range2d.h>
#include <tbb/parallel_for.h>

#include <algorithm>
#include <vector>

#include "core/quant/quant.h"
#include "core/ref/ref_ops.h"
#include "cpu/ops/cpu_ops.h"
#include "cpu/quant_gemm.h"
#include "cpu/quant_rows.h"

namespace ls::cpu {

// The ids are checked first (core/ref/mul_mat_id.cpp); the activation rows are prepared once;
// then (token, selected expert) pairs and groups of 8 weight rows run in parallel, each
// output by gemm_tile or dot_canonical: mul_mat's arithmetic, so the bits are the
// reference's.
void mul_mat_id(const Tensor& dst) {
    const Tensor& w = *dst.src[0];
    const Tensor& x = *dst.src[1];
    const Tensor& ids = *dst.src[2];
    const int64_t K = w.ne[0], N = w.ne[1], E = w.ne[2], k = ids.ne[0], T = ids.ne[1], X = x.ne[1];
    const int32_t* id = reinterpret_cast<const int32_t*>(ids.row(0));
    ref::check_expert_ids(id, k * T, E);
    const bool tiled = gemm_supported(w.type);
    const size_t astride = tiled ? gemm_act_stride(w.type, K) : row_bytes(vec_dot_type(w.type), K);
    std::vector<uint8_t> aq(size_t(X * T) * astride);
    tbb::parallel_for(int64_t(0), X * T, [&](int64_t r) {
        const float* src = reinterpret_cast<const float*>(x.row(r % X, r / X));
        if (tiled) gemm_prepare_act(w.type, src, aq.data() + size_t(r) * astride, K);
        else quantize_row_act(vec_dot_type(w.type), src, aq.data() + size_t(r) * astride, K);
    });
    const int64_t rows = tiled ? gemm_rows(w.type, 1) : 8;  // one token per call
    const int64_t groups = (N + rows - 1) / rows;
    tbb::parallel_for(tbb::blocked_range2d<int64_t>(0, k * T, 1, 0, groups, 16), [&](const tbb::blocked_range2d<int64_t>& r) {
        for (int64_t p = r.rows().begin(); p < r.rows().end(); ++p) {
            const int64_t t = p / k, j = p % k, e = id[p];
            const uint8_t* a = aq.data() + size_t(t * X + (X == 1 ? 0 : j)) * astride;
            float* out = reinterpret_cast<float*>(dst.row(j, t));
            for (int64_t gi = r.cols().begin(); gi < r.cols().end(); ++gi) {
                const int64_t n0 = gi * rows, nr = std::min<int64_t>(rows, N - n0);
                if (tiled) {
                    float* o = out + n0;
                    gemm_tile(w.type, w.row(n0, e), w.nb[1], int(nr), a, astride, 1, K, &o);
                } else {
                    for (int64_t n = n0; n < n0 + nr; ++n) out[n] = dot_canonical(w.type, w.row(n, e), a, K);
                }
            }
        }
    });
}

}  // namespace ls::cpu
