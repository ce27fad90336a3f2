#include <stdexcept>
#include <string>
#include <vector>

#include "core/quant/quant.h"
#include "core/ref/ref_ops.h"

namespace ls::ref {

// Every id is checked before anything is written; then each (j, t) is mul_mat of expert
// ids[j, t] against activation row j % X of token t: the row quantized to the weight type's
// dot type, each output vec_dot_ref's chain (core/ref/mul_mat.cpp).
void mul_mat_id(const Tensor& dst) {
    const Tensor& w = *dst.src[0];
    const Tensor& x = *dst.src[1];
    const Tensor& ids = *dst.src[2];
    const int64_t K = w.ne[0], N = w.ne[1], E = w.ne[2], k = ids.ne[0], T = ids.ne[1], X = x.ne[1];
    const int32_t* id = reinterpret_cast<const int32_t*>(ids.row(0));
    check_expert_ids(id, k * T, E);
    const DType at = vec_dot_type(w.type);
    std::vector<uint8_t> arow(row_bytes(at, K));
    for (int64_t t = 0; t < T; ++t)
        for (int64_t j = 0; j < k; ++j) {
            quantize_row(at, reinterpret_cast<const float*>(x.row(X == 1 ? 0 : j, t)), arow.data(), K);
            const int64_t e = id[t * k + j];
            float* out = reinterpret_cast<float*>(dst.row(j, t));
            for (int64_t n = 0; n < N; ++n) out[n] = vec_dot_ref(w.type, w.row(n, e), arow.data(), K);
        }
}

void check_expert_ids(const int32_t* ids, int64_t n, int64_t n_experts) {
    for (int64_t i = 0; i < n; ++i)
        if (ids[i] < 0 || ids[i] >= n_experts)
            throw std::out_of_range("mul_mat_id: expert id " + std::to_string(ids[i]) + " at position " + std::to_string(i) +
                                    " outside [0, " + std::to_string(n_experts) + ")");
}

}  // namespace ls::ref
