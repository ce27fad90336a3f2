#include "core/rules/canon.h"
#include "core/ref/ref_ops.h"
#include "core/ref/unary.h"

namespace ls::ref {
void sigmoid(const Tensor& dst) { unary_map(dst, det_sigmoid); }
}  // namespace ls::ref
