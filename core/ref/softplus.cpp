#include "core/rules/canon.h"
#include "core/ref/ref_ops.h"
#include "core/ref/unary.h"

namespace ls::ref {
void softplus(const Tensor& dst) { unary_map(dst, det_softplus); }
}  // namespace ls::ref
