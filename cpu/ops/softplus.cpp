#include <tbb/parallel_for.h>

#include "core/rules/canon.h"
#include "cpu/ops/cpu_ops.h"

namespace ls::cpu {
// Scalar det_softplus (det_log1p of det_exp, core/rules/canon.h): the gates it serves are tiny
// ([Hv, T]).
void softplus(const Tensor& dst) {
    const float* x = dst.src[0]->data_as<const float>();
    float* y = dst.data_as<float>();
    tbb::parallel_for(int64_t(0), dst.nelements(), [&](int64_t i) { y[i] = det_softplus(x[i]); });
}
}  // namespace ls::cpu
