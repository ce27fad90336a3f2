#include "backends/vulkan/ops/vk_ops.h"

namespace ls::vk {

bool supports_rms_norm(const Tensor& n) { return n.src[0]->nb[0] == 4 && (!n.src[1] || n.src[1]->is_contiguous()); }

void plan_rms_norm(const Tensor&, Plan&) {}

void record_rms_norm(const Tensor& n, Recorder& r) {
    const Tensor *a = n.src[0], *b = n.src[1];
    PcRmsNorm pc{r.addr(a), b ? r.addr(b) : 0, r.addr(&n), uint32_t(a->ne[0]), uint32_t(a->nrows()), uint32_t(a->ne[1]),
                 uint32_t(a->ne[2]), uint32_t(a->nb[1]), uint32_t(a->nb[2]), uint32_t(a->nb[3]), uint32_t(b != nullptr),
                 n.get_params<RmsNormParams>(), 0};
    // One workgroup per row.
    const uint64_t rows = std::max<uint64_t>(uint64_t(a->nrows()), 1);
    const uint32_t gx = uint32_t(std::min<uint64_t>(rows, 65535)), gy = uint32_t((rows + gx - 1) / gx);
    if (b) r.dispatch("rms_norm", pc, gx, gy, {r.range(a), r.range(b)}, {r.range(&n)});
    else r.dispatch("rms_norm", pc, gx, gy, {r.range(a)}, {r.range(&n)});
}

}  // namespace ls::vk
