#include "core/rules/canon.h"

#include "core/ref/ref_ops.h"
#include "core/ref/unary.h"

namespace ls::ref {
void silu(const Tensor& dst) { unary_map(dst, det_silu); }
}  // namespace ls::ref
