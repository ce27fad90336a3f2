#include "backends/vulkan/ops/unary.h"
#include "backends/vulkan/ops/vk_ops.h"

namespace ls::vk {

bool supports_softplus(const Tensor& n) { return supports_unary(n); }
void plan_softplus(const Tensor&, Plan&) {}
void record_softplus(const Tensor& n, Recorder& r) { record_unary(n, r, "softplus", 0.f); }

}  // namespace ls::vk
