#include <cmath>

#include "core/rules/canon.h"
#include "core/ir/op_params.h"
#include "core/ref/ref_ops.h"

namespace ls::ref {

void softmax_row(const float* px, float* py, int64_t K, float scale) {
    float mx = -INFINITY;
    for (int64_t i = 0; i < K; ++i) mx = std::fmax(mx, px[i] * scale);
    for (int64_t i = 0; i < K; ++i) py[i] = det_exp(px[i] * scale - mx);
    const float sum = canon_sum(py, K);
    for (int64_t i = 0; i < K; ++i) py[i] = canon_div(py[i], sum);
}

void softmax(const Tensor& dst) {
    const Tensor& x = *dst.src[0];
    const float scale = dst.get_params<SoftmaxParams>().scale;
    const int64_t K = x.ne[0];
    for (int64_t r = 0; r < x.nrows(); ++r) softmax_row(x.data_as<const float>() + r * K, dst.data_as<float>() + r * K, K, scale);
}

}  // namespace ls::ref
