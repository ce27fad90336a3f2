#include "backends/vulkan/ops/unary.h"
#include "backends/vulkan/ops/vk_ops.h"

namespace ls::vk {

bool supports_sigmoid(const Tensor& n) { return supports_unary(n); }
void plan_sigmoid(const Tensor&, Plan&) {}
void record_sigmoid(const Tensor& n, Recorder& r) { record_unary(n, r, "sigmoid", 0.f); }

}  // namespace ls::vk
