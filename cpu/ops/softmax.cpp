#include <tbb/parallel_for.h>

#include <cmath>

#include "core/ir/op_params.h"
#include "cpu/ops/cpu_ops.h"
#include "cpu/simd.h"

namespace ls::cpu {

void softmax(const Tensor& dst) {
    const Tensor& x = *dst.src[0];
    const float scale = dst.get_params<SoftmaxParams>().scale;
    const int64_t K = x.ne[0];
    tbb::parallel_for(int64_t(0), x.nrows(), [&](int64_t r) {
        const float* px = x.data_as<const float>() + r * K;
        float* py = dst.data_as<float>() + r * K;
        float mx = -INFINITY;
        for (int64_t i = 0; i < K; ++i) mx = std::fmax(mx, px[i] * scale);
        double sum = 0;
        for (int64_t i = 0; i < K; ++i) sum += (py[i] = det_exp(px[i] * scale - mx));
        for (int64_t i = 0; i < K; ++i) py[i] = float(double(py[i]) / sum);
    });
}

}  // namespace ls::cpu
