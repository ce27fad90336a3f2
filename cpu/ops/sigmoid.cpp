#include "cpu/ops/cpu_ops.h"
#include "cpu/ops/unary.h"
#include "cpu/simd.h"

namespace ls::cpu {
void sigmoid(const Tensor& dst) {
    // det_sigmoid (core/rules/canon.h): 1 / (1 + e^-x), the division correctly rounded.
    unary_map(dst, [](auto x) {
        using T = decltype(x);
        return T(1.0f) / (T(1.0f) + simd::det_exp(-x));
    });
}
}  // namespace ls::cpu
