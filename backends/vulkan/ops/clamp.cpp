#include "backends/vulkan/ops/unary.h"
#include "backends/vulkan/ops/vk_ops.h"

namespace ls::vk {

// The unary pattern with two parameters (shaders/clamp.comp, PcClamp).
bool supports_clamp(const Tensor& n) { return supports_unary(n); }
void plan_clamp(const Tensor&, Plan&) {}
void record_clamp(const Tensor& n, Recorder& r) {
    const Tensor* a = n.src[0];
    PcClamp pc{r.addr(a), r.addr(&n), uint32_t(n.nelements()), n.get_params<ClampParams>(), 0};
    r.dispatch1d("clamp", pc, uint64_t(n.nelements()), {r.range(a)}, {r.range(&n)});
}

}  // namespace ls::vk
