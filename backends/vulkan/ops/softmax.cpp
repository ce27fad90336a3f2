#include "backends/vulkan/ops/vk_ops.h"

namespace ls::vk {

bool supports_softmax(const Tensor& n) { return n.src[0]->is_contiguous(); }

void plan_softmax(const Tensor&, Plan&) {}

void record_softmax(const Tensor& n, Recorder& r) {
    const Tensor* a = n.src[0];
    PcSoftmax pc{r.addr(a), r.addr(&n), uint32_t(a->ne[0]), uint32_t(a->nrows()), n.get_params<SoftmaxParams>(), 0};
    // One workgroup per row.
    const uint64_t rows = std::max<uint64_t>(uint64_t(a->nrows()), 1);
    const uint32_t gx = uint32_t(std::min<uint64_t>(rows, 65535)), gy = uint32_t((rows + gx - 1) / gx);
    r.dispatch("softmax", pc, gx, gy, {r.range(a)}, {r.range(&n)});
}

}  // namespace ls::vk
