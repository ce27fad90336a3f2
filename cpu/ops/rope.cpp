#include <tbb/parallel_for.h>

#include <cmath>
#include <vector>

#include "core/op_params.h"
#include "cpu/ops/cpu_ops.h"

namespace ls::cpu {

// Angles as in ref::rope (double, same formula), computed once per token for all heads.
void rope(const Tensor& dst) {
    const Tensor& x = *dst.src[0];
    const int32_t* pos = dst.src[1]->data_as<const int32_t>();
    const float* ff = dst.src[2] ? dst.src[2]->data_as<const float>() : nullptr;
    const RopeParams p = dst.get_params<RopeParams>();
    const int64_t half = p.n_dims / 2;
    std::vector<double> inv_freq(half);  // the reference's pow(), once per op instead of per token
    for (int64_t i = 0; i < half; ++i) inv_freq[i] = std::pow(double(p.freq_base), -2.0 * i / p.n_dims);
    tbb::parallel_for(int64_t(0), x.ne[2], [&](int64_t t) {
        std::vector<float> cs(half), sn(half);
        for (int64_t i = 0; i < half; ++i) {
            double theta = double(pos[t]) * p.freq_scale * inv_freq[i];
            if (ff) theta /= ff[i];
            cs[i] = float(std::cos(theta));
            sn[i] = float(std::sin(theta));
        }
        for (int64_t h = 0; h < x.ne[1]; ++h) {
            const float* px = reinterpret_cast<const float*>(x.row(h, t));
            float* py = reinterpret_cast<float*>(dst.row(h, t));
            for (int64_t i = p.n_dims; i < x.ne[0]; ++i) py[i] = px[i];
            for (int64_t i = 0; i < half; ++i) {
                const int64_t i0 = p.mode == ROPE_NEOX ? i : 2 * i;
                const int64_t i1 = p.mode == ROPE_NEOX ? i + half : 2 * i + 1;
                const float a = px[i0], b = px[i1];
                py[i0] = a * cs[i] - b * sn[i];
                py[i1] = a * sn[i] + b * cs[i];
            }
        }
    });
}

}  // namespace ls::cpu
