#include "core/ir/op_params.h"
#include "core/ref/ref_ops.h"
#include "core/rules/canon.h"

namespace ls::ref {

// LayerNorm of each row of x [K, ...]: mean = canon_sum(x) / K, d_i = x_i - mean,
// var = canon_dot(d, d) / K, r = 1 / sqrt(var + eps) (each correctly rounded), then
// y_i = ((d_i * r) * w_i) + b_i, w and b when given. Every backend follows this order.
void layer_norm(const Tensor& dst) {
    const Tensor& x = *dst.src[0];
    const float* w = dst.src[1] ? dst.src[1]->data_as<const float>() : nullptr;
    const float* b = dst.src[2] ? dst.src[2]->data_as<const float>() : nullptr;
    const float eps = dst.get_params<LayerNormParams>().eps;
    const int64_t K = x.ne[0];
    for (int64_t i3 = 0; i3 < x.ne[3]; ++i3)
        for (int64_t i2 = 0; i2 < x.ne[2]; ++i2)
            for (int64_t i1 = 0; i1 < x.ne[1]; ++i1) {
                const float* px = reinterpret_cast<const float*>(x.row(i1, i2, i3));
                float* py = reinterpret_cast<float*>(dst.row(i1, i2, i3));
                const float mean = canon_div(canon_sum(px, K), float(K));
                for (int64_t i = 0; i < K; ++i) py[i] = px[i] - mean;
                const float r = canon_div(1.0f, canon_sqrt(canon_div(canon_dot(py, py, K), float(K)) + eps));
                for (int64_t i = 0; i < K; ++i) {
                    float v = py[i] * r;
                    if (w) v = v * w[i];
                    if (b) v = v + b[i];
                    py[i] = v;
                }
            }
}

}  // namespace ls::ref
