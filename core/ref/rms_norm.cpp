#include <cmath>

#include "core/rules/canon.h"
#include "core/ir/op_params.h"
#include "core/ref/ref_ops.h"

namespace ls::ref {

void rms_norm(const Tensor& dst) {
    const Tensor& x = *dst.src[0];
    const Tensor* w = dst.src[1];
    const float eps = dst.get_params<RmsNormParams>().eps;
    const int64_t K = x.ne[0];
    for (int64_t i3 = 0; i3 < x.ne[3]; ++i3)
        for (int64_t i2 = 0; i2 < x.ne[2]; ++i2)
            for (int64_t i1 = 0; i1 < x.ne[1]; ++i1) {
                const float* px = reinterpret_cast<const float*>(x.row(i1, i2, i3));
                float* py = reinterpret_cast<float*>(dst.row(i1, i2, i3));
                const float ss = canon_dot(px, px, K);
                const float r = canon_div(1.0f, canon_sqrt(canon_div(ss, float(K)) + eps));
                for (int64_t i = 0; i < K; ++i) py[i] = px[i] * r * (w ? w->data_as<const float>()[i] : 1.0f);
            }
}

}  // namespace ls::ref
