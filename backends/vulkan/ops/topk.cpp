#include "backends/vulkan/ops/vk_ops.h"

namespace ls::vk {

bool supports_topk(const Tensor& n) { return n.src[0]->type == DType::F32 && n.src[0]->nb[0] == 4 && n.is_contiguous(); }

void plan_topk(const Tensor&, Plan&) {}

void record_topk(const Tensor& n, Recorder& r) {
    const Tensor* a = n.src[0];
    PcTopk pc{r.addr(a), r.addr(&n), uint32_t(a->nb[1]), uint32_t(a->ne[0]), uint32_t(a->ne[1]), 0, n.get_params<TopkParams>(), 0};
    r.dispatch1d("topk", pc, uint64_t(a->ne[1]), {r.range(a)}, {r.range(&n)});
}

}  // namespace ls::vk
