#include <tbb/parallel_for.h>

#include "core/rules/canon.h"
#include "core/ir/op_params.h"
#include "cpu/ops/cpu_ops.h"

namespace ls::cpu {
// Scalar det_tanh (core/rules/canon.h): it runs once per logit, after the output projection
// that costs thousands of times more.
void softcap(const Tensor& dst) {
    const float c = dst.get_params<SoftcapParams>().cap;
    const float* x = dst.src[0]->data_as<const float>();
    float* y = dst.data_as<float>();
    tbb::parallel_for(tbb::blocked_range<int64_t>(0, dst.nelements(), 4096), [&](const tbb::blocked_range<int64_t>& r) {
        for (int64_t i = r.begin(); i < r.end(); ++i) y[i] = c * det_tanh(canon_div(x[i], c));
    });
}
}  // namespace ls::cpu
