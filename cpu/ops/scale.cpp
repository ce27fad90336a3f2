#include "core/ir/op_params.h"
#include "cpu/ops/cpu_ops.h"
#include "cpu/ops/unary.h"

namespace ls::cpu {
void scale(const Tensor& dst) {
    const float s = dst.get_params<ScaleParams>().s;
    unary_map(dst, [s](auto x) { return x * s; });
}
}  // namespace ls::cpu
