#include "backends/vulkan/ops/binary.h"
#include "backends/vulkan/ops/vk_ops.h"

namespace ls::vk {

bool supports_mul(const Tensor& n) { return supports_binary(n); }
void plan_mul(const Tensor&, Plan&) {}
void record_mul(const Tensor& n, Recorder& r) { record_binary(n, r, "mul"); }

}  // namespace ls::vk
