#include "core/ref/binary.h"
#include "core/ref/ref_ops.h"

namespace ls::ref {
void mul(const Tensor& dst) { broadcast_binary(dst, [](float a, float b) { return a * b; }); }
}  // namespace ls::ref
