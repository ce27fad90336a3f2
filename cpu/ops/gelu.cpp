#include <cmath>

#include "cpu/ops/cpu_ops.h"
#include "cpu/ops/unary.h"

namespace ls::cpu {
// Same formula as ref::gelu_tanh, on batches.
void gelu(const Tensor& dst) {
    unary_map(dst, [](auto x) {
        using std::tanh;
        using xsimd::tanh;
        const decltype(x) c(0.7978845608028654f), k(0.044715f), half(0.5f), one(1.0f);
        return half * x * (one + tanh(c * x * (one + k * x * x)));
    });
}
}  // namespace ls::cpu
