#include "backends/vulkan/ops/unary.h"
#include "backends/vulkan/ops/vk_ops.h"

namespace ls::vk {

bool supports_silu(const Tensor& n) { return supports_unary(n); }
void plan_silu(const Tensor&, Plan&) {}
void record_silu(const Tensor& n, Recorder& r) { record_unary(n, r, "silu", 0.f); }

}  // namespace ls::vk
