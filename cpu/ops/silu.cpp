#include "core/detmath.h"
#include "cpu/ops/cpu_ops.h"
#include "cpu/ops/scalar_map.h"

namespace ls::cpu {
void silu(const Tensor& dst) { scalar_map(dst, det_silu); }
}  // namespace ls::cpu
