#include <cmath>

#include "core/ref/ref_ops.h"
#include "core/ref/unary.h"

namespace ls::ref {
void silu(const Tensor& dst) { unary_map(dst, [](float x) { return x / (1.0f + std::exp(-x)); }); }
}  // namespace ls::ref
