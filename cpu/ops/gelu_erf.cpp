#include "cpu/ops/cpu_ops.h"
#include "cpu/ops/unary.h"
#include "cpu/simd.h"

namespace ls::cpu {
void gelu_erf(const Tensor& dst) {
    unary_map(dst, [](auto x) { return simd::det_gelu_erf(x); });
}
}  // namespace ls::cpu
