#include "backends/vulkan/ops/binary.h"
#include "backends/vulkan/ops/vk_ops.h"

namespace ls::vk {

bool supports_add(const Tensor& n) { return supports_binary(n); }
void plan_add(const Tensor&, Plan&) {}
void record_add(const Tensor& n, Recorder& r) { record_binary(n, r, "add"); }

}  // namespace ls::vk
