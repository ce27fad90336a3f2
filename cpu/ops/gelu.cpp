#include "core/detmath.h"
#include "cpu/ops/cpu_ops.h"
#include "cpu/ops/scalar_map.h"

namespace ls::cpu {
// The scalar definition itself; written branch-free enough for the compiler to vectorize.
void gelu(const Tensor& dst) { scalar_map(dst, det_gelu); }
}  // namespace ls::cpu
