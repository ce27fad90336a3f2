#include "backends/vulkan/ops/unary.h"
#include "backends/vulkan/ops/vk_ops.h"

namespace ls::vk {

bool supports_softcap(const Tensor& n) { return supports_unary(n); }
void plan_softcap(const Tensor&, Plan&) {}
void record_softcap(const Tensor& n, Recorder& r) { record_unary(n, r, "softcap", n.get_params<SoftcapParams>().cap); }

}  // namespace ls::vk
