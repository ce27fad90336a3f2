#include "cpu/ops/binary.h"
#include "cpu/ops/cpu_ops.h"

namespace ls::cpu {
void add(const Tensor& dst) { broadcast_binary(dst, [](auto a, auto b) { return a + b; }); }
}  // namespace ls::cpu
