#include "backends/vulkan/ops/vk_ops.h"

namespace ls::vk {

bool supports_topk(const Tensor& n) {
    const Tensor* v = n.src[1];
    return n.src[0]->type == DType::F32 && n.src[0]->nb[0] == 4 && (!v || v->nb[0] == 4) && n.is_contiguous();
}

void plan_topk(const Tensor&, Plan&) {}

void record_topk(const Tensor& n, Recorder& r) {
    const Tensor* a = n.src[0];
    const Tensor* v = n.src[1] ? n.src[1] : a;
    PcTopk pc{r.addr(a), r.addr(v), r.addr(&n), uint32_t(a->nb[1]), uint32_t(v->nb[1]), uint32_t(a->ne[0]), uint32_t(a->ne[1]),
              n.get_params<TopkParams>()};
    r.dispatch1d("topk", pc, uint64_t(a->ne[1]), {r.range(a), r.range(v)}, {r.range(&n)});
}

}  // namespace ls::vk
