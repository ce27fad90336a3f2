#include "core/ref/ref_ops.h"
#include "core/ref/unary.h"

namespace ls::ref {
void gelu(const Tensor& dst) { unary_map(dst, gelu_tanh); }
}  // namespace ls::ref
