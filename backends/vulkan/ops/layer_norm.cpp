#include "backends/vulkan/ops/vk_ops.h"

namespace ls::vk {

bool supports_layer_norm(const Tensor& n) {
    return n.src[0]->nb[0] == 4 && (!n.src[1] || n.src[1]->is_contiguous()) && (!n.src[2] || n.src[2]->is_contiguous());
}

void plan_layer_norm(const Tensor&, Plan&) {}

void record_layer_norm(const Tensor& n, Recorder& r) {
    const Tensor *a = n.src[0], *w = n.src[1], *b = n.src[2];
    PcLayerNorm pc{r.addr(a), w ? r.addr(w) : 0, b ? r.addr(b) : 0, r.addr(&n), uint32_t(a->ne[0]), uint32_t(a->nrows()),
                   uint32_t(a->ne[1]), uint32_t(a->ne[2]), uint32_t(a->nb[1]), uint32_t(a->nb[2]), uint32_t(a->nb[3]),
                   uint32_t(w != nullptr) | uint32_t(b != nullptr) << 1, n.get_params<LayerNormParams>(), 0};
    // One workgroup per row. (Absent w or b: x's range stands in for theirs.)
    const uint64_t rows = std::max<uint64_t>(uint64_t(a->nrows()), 1);
    const uint32_t gx = uint32_t(std::min<uint64_t>(rows, 65535)), gy = uint32_t((rows + gx - 1) / gx);
    r.dispatch("layer_norm", pc, gx, gy, {r.range(a), r.range(w ? w : a), r.range(b ? b : a)}, {r.range(&n)});
}

}  // namespace ls::vk
