#include <tbb/parallel_for.h>

#include "core/ir/op_params.h"
#include "cpu/ops/cpu_ops.h"
#include "cpu/simd.h"

namespace ls::cpu {

// core/ref/layer_norm.cpp's order: the canonical sum and mean, the centred row written to y,
// its canonical sum of squares, 1/sqrt correctly rounded, then ((d * r) * w) + b per element.
void layer_norm(const Tensor& dst) {
    const Tensor& x = *dst.src[0];
    const float* w = dst.src[1] ? dst.src[1]->data_as<const float>() : nullptr;
    const float* b = dst.src[2] ? dst.src[2]->data_as<const float>() : nullptr;
    const float eps = dst.get_params<LayerNormParams>().eps;
    const int64_t K = x.ne[0];
    tbb::parallel_for(int64_t(0), x.nrows(), [&](int64_t r) {
        const int64_t i1 = r % x.ne[1], i2 = (r / x.ne[1]) % x.ne[2], i3 = r / (x.ne[1] * x.ne[2]);
        const float* px = reinterpret_cast<const float*>(x.row(i1, i2, i3));
        float* py = reinterpret_cast<float*>(dst.row(i1, i2, i3));
        const float mean = canon_div(simd::canon_sum(px, K), float(K));
        using simd::fbatch;
        const fbatch vm(mean);
        int64_t i = 0;
        for (; i + simd::W <= K; i += simd::W) (fbatch::load_unaligned(px + i) - vm).store_unaligned(py + i);
        for (; i < K; ++i) py[i] = px[i] - mean;
        const float rs = canon_div(1.0f, canon_sqrt(canon_div(simd::canon_dot(py, py, K), float(K)) + eps));
        const fbatch vr(rs);
        for (i = 0; i + simd::W <= K; i += simd::W) {
            fbatch v = fbatch::load_unaligned(py + i) * vr;
            if (w) v = v * fbatch::load_unaligned(w + i);
            if (b) v = v + fbatch::load_unaligned(b + i);
            v.store_unaligned(py + i);
        }
        for (; i < K; ++i) {
            float v = py[i] * rs;
            if (w) v = v * w[i];
            if (b) v = v + b[i];
            py[i] = v;
        }
    });
}

}  // namespace ls::cpu
