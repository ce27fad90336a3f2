#include <tbb/parallel_for.h>

#include "core/ir/op_params.h"
#include "cpu/ops/cpu_ops.h"
#include "cpu/simd.h"

namespace ls::cpu {

void rms_norm(const Tensor& dst) {
    const Tensor& x = *dst.src[0];
    const float* w = dst.src[1] ? dst.src[1]->data_as<const float>() : nullptr;
    const float eps = dst.get_params<RmsNormParams>().eps;
    const int64_t K = x.ne[0];
    tbb::parallel_for(int64_t(0), x.nrows(), [&](int64_t r) {
        const int64_t i1 = r % x.ne[1], i2 = (r / x.ne[1]) % x.ne[2], i3 = r / (x.ne[1] * x.ne[2]);
        const float* px = reinterpret_cast<const float*>(x.row(i1, i2, i3));
        float* py = reinterpret_cast<float*>(dst.row(i1, i2, i3));
        // core/ref/rms_norm.cpp: the canonical sum of squares, its mean and 1/sqrt correctly rounded.
        const float rs = canon_div(1.0f, canon_sqrt(canon_div(simd::canon_dot(px, px, K), float(K)) + eps));
        using simd::fbatch;
        int64_t i = 0;
        const fbatch vr(rs);
        for (; i + simd::W <= K; i += simd::W) {
            fbatch v = fbatch::load_unaligned(px + i) * vr;
            if (w) v = v * fbatch::load_unaligned(w + i);
            v.store_unaligned(py + i);
        }
        for (; i < K; ++i) py[i] = px[i] * rs * (w ? w[i] : 1.0f);
    });
}

}  // namespace ls::cpu
