#include <cmath>

#include "cpu/ops/cpu_ops.h"
#include "cpu/ops/unary.h"

namespace ls::cpu {
void silu(const Tensor& dst) {
    unary_map(dst, [](auto x) {
        using std::exp;
        using xsimd::exp;
        const decltype(x) one(1.0f);
        return x / (one + exp(-x));
    });
}
}  // namespace ls::cpu
