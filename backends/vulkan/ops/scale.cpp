#include "backends/vulkan/ops/unary.h"
#include "backends/vulkan/ops/vk_ops.h"

namespace ls::vk {

bool supports_scale(const Tensor& n) { return supports_unary(n); }
void plan_scale(const Tensor&, Plan&) {}
void record_scale(const Tensor& n, Recorder& r) { record_unary(n, r, "scale", n.get_params<ScaleParams>().s); }

}  // namespace ls::vk
