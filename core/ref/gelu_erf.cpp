#include "core/rules/canon.h"
#include "core/ref/ref_ops.h"
#include "core/ref/unary.h"

namespace ls::ref {
void gelu_erf(const Tensor& dst) { unary_map(dst, [](float x) { return det_gelu_erf(x); }); }
}  // namespace ls::ref
