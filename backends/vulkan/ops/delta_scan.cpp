#include "backends/vulkan/ops/type_support.h"
#include "backends/vulkan/ops/vk_ops.h"

namespace ls::vk {

bool supports_delta_scan(const Tensor& n) {
    const Tensor* s0 = n.src[0];
    return s0->type == DType::F32 && s0->nb[0] == 4 && n.src[1]->is_contiguous() && n.src[2]->is_contiguous() &&
           n.src[3]->type == DType::F32 && n.src[3]->nb[0] == 4 && is_index_input(n.src[4]) && is_index_input(n.src[5]) &&
           n.is_contiguous();
}

// The run table was checked by core before the graph ran (check_index_inputs).
void plan_delta_scan(const Tensor&, Plan&) {}

void record_delta_scan(const Tensor& n, Recorder& r) {
    const Tensor *a = n.src[0], *b = n.src[1], *beta = n.src[2], *st = n.src[3], *runs = n.src[4], *order = n.src[5];
    const DeltaScanParams dp = n.get_params<DeltaScanParams>();
    PcDeltaScan pc{r.addr(a), r.addr(b), r.addr(beta), r.addr(st), r.addr(runs), r.addr(order), r.addr(&n),
                   uint32_t(a->nb[1]), uint32_t(st->nb[1]), uint32_t(runs->ne[1]), 0, dp, 0};
    // One workgroup per (run, value head).
    const uint64_t groups = std::max<uint64_t>(uint64_t(runs->ne[1]) * uint64_t(dp.n_v_heads), 1);
    const uint32_t gx = uint32_t(std::min<uint64_t>(groups, 65535)), gy = uint32_t((groups + gx - 1) / gx);
    r.dispatch("delta_scan", pc, gx, gy, {r.range(a), r.range(b), r.range(beta), r.range(st), r.range(runs), r.range(order)},
               {r.range(&n), r.range(st)});
}

}  // namespace ls::vk
