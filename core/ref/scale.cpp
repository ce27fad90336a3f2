#include "core/ir/op_params.h"
#include "core/ref/ref_ops.h"
#include "core/ref/unary.h"

namespace ls::ref {
void scale(const Tensor& dst) {
    const float s = dst.get_params<ScaleParams>().s;
    unary_map(dst, [s](float x) { return x * s; });
}
}  // namespace ls::ref
