#include "backends/vulkan/ops/type_support.h"
#include "backends/vulkan/ops/vk_ops.h"

namespace ls::vk {

// x rows, w, state, runs, order: f32 / i32 with unit element stride
bool supports_conv1d_scan(const Tensor& n) {
    const Tensor* s0 = n.src[0];
    return s0->type == DType::F32 && s0->nb[0] == 4 && n.src[1]->is_contiguous() && n.src[2]->type == DType::F32 &&
           n.src[2]->nb[0] == 4 && is_index_input(n.src[3]) && is_index_input(n.src[4]) && n.nb[0] == 4 &&
           n.get_params<Conv1dScanParams>().d_conv >= 1 && n.get_params<Conv1dScanParams>().d_conv <= 16;
}

// The run table was checked by core before the graph ran (check_index_inputs; SEMANTICS.md
// section 2): no state is written on a bad one.
void plan_conv1d_scan(const Tensor&, Plan&) {}

void record_conv1d_scan(const Tensor& n, Recorder& r) {
    const Tensor *a = n.src[0], *b = n.src[1], *st = n.src[2], *runs = n.src[3], *order = n.src[4];
    PcConv1dScan pc{r.addr(a), r.addr(b), r.addr(st), r.addr(runs), r.addr(order), r.addr(&n), uint32_t(a->nb[1]),
                    uint32_t(st->nb[1]), uint32_t(n.nb[1]), uint32_t(a->ne[0]),
                    uint32_t(n.get_params<Conv1dScanParams>().d_conv), uint32_t(runs->ne[1])};
    r.dispatch1d("conv1d_scan", pc, uint64_t(runs->ne[1]) * uint64_t(a->ne[0]),
                 {r.range(a), r.range(b), r.range(st), r.range(runs), r.range(order)}, {r.range(&n), r.range(st)});
}

}  // namespace ls::vk
