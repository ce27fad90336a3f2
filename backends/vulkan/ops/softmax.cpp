#include "backends/vulkan/ops/vk_ops.h"

namespace ls::vk {

bool supports_softmax(const Tensor& n) { return n.src[0]->is_contiguous(); }

void plan_softmax(const Tensor&, Plan&) {}

void record_softmax(const Tensor& n, Recorder& r) {
    const Tensor* a = n.src[0];
    PcSoftmax pc{r.addr(a), r.addr(&n), uint32_t(a->ne[0]), uint32_t(a->nrows()), n.get_params<SoftmaxParams>(), 0};
    r.dispatch1d("softmax", pc, uint64_t(a->nrows()), {r.range(a)}, {r.range(&n)});
}

}  // namespace ls::vk
