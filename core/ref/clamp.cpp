#include "core/ir/op_params.h"
#include "core/ref/ref_ops.h"
#include "core/ref/unary.h"

namespace ls::ref {
// Two comparisons and a choice, no arithmetic: a NaN fails both comparisons and comes out as
// it went in (bits included), and so does a zero of either sign between the bounds.
void clamp(const Tensor& dst) {
    const ClampParams p = dst.get_params<ClampParams>();
    unary_map(dst, [p](float x) { return x < p.min ? p.min : (x > p.max ? p.max : x); });
}
}  // namespace ls::ref
