#include "backends/vulkan/ops/unary.h"
#include "backends/vulkan/ops/vk_ops.h"

namespace ls::vk {

bool supports_gelu_erf(const Tensor& n) { return supports_unary(n); }
void plan_gelu_erf(const Tensor&, Plan&) {}
void record_gelu_erf(const Tensor& n, Recorder& r) { record_unary(n, r, "gelu_erf", 0.f); }

}  // namespace ls::vk
