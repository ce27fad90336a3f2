#include <algorithm>

#include "backends/vulkan/ops/type_support.h"
#include "backends/vulkan/ops/vk_ops.h"

namespace ls::vk {

bool supports_ssm_scan(const Tensor& n) {
    for (int i = 0; i < 4; ++i)
        if (n.src[i]->type != DType::F32 || !n.src[i]->is_contiguous()) return false;
    return is_index_input(n.src[4]) && is_index_input(n.src[5]) && n.is_contiguous();
}

// The run table was checked by core before the graph ran (check_index_inputs).
void plan_ssm_scan(const Tensor&, Plan&) {}

void record_ssm_scan(const Tensor& n, Recorder& r) {
    const Tensor *x = n.src[0], *dt = n.src[1], *A = n.src[2], *st = n.src[3], *runs = n.src[4], *order = n.src[5];
    const SsmScanParams sp = n.get_params<SsmScanParams>();
    PcSsmScan pc{r.addr(x), r.addr(dt), r.addr(A), r.addr(st), r.addr(runs), r.addr(order), r.addr(&n),
                 uint32_t(x->nb[1]), uint32_t(st->nb[1]), uint32_t(runs->ne[1]), 0, sp};
    // One workgroup per (run, head).
    const uint64_t groups = std::max<uint64_t>(uint64_t(runs->ne[1]) * uint64_t(sp.n_head), 1);
    const uint32_t gx = uint32_t(std::min<uint64_t>(groups, 65535)), gy = uint32_t((groups + gx - 1) / gx);
    r.dispatch("ssm_scan", pc, gx, gy, {r.range(x), r.range(dt), r.range(A), r.range(st), r.range(runs), r.range(order)},
               {r.range(&n), r.range(st)});
}

}  // namespace ls::vk
