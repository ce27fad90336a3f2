// The cos/sin table is a graph input core made (ops::rope_table): a device's double libm
// need not round as the host's.
#include "backends/vulkan/ops/type_support.h"
#include "backends/vulkan/ops/vk_ops.h"

namespace ls::vk {

bool supports_rope(const Tensor& n) {
    return n.src[0]->nb[0] == 4 && n.src[1]->type == DType::F32 && n.src[1]->is_contiguous();
}

void plan_rope(const Tensor&, Plan&) {}

void record_rope(const Tensor& n, Recorder& r) {
    const Tensor *a = n.src[0], *cs = n.src[1];
    const RopeParams p = n.get_params<RopeParams>();
    const uint32_t D = uint32_t(a->ne[0]), H = uint32_t(a->ne[1]), T = uint32_t(a->ne[2]);
    PcRope pc{r.addr(a), r.addr(cs), r.addr(&n), D, H, T, uint32_t(a->nb[1]), uint32_t(a->nb[2]), 0, p};
    const uint64_t per_head = uint64_t(p.n_dims / 2) + (D - uint32_t(p.n_dims));
    r.dispatch1d("rope", pc, per_head * H * T, {r.range(a), r.range(cs)}, {r.range(&n)});
}

}  // namespace ls::vk
