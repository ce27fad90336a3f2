#include "backends/vulkan/ops/type_support.h"
#include "backends/vulkan/ops/vk_ops.h"

namespace ls::vk {

// The rows: a graph input core checks before the graph runs (core/ir/index_inputs.h).
bool supports_get_rows(const Tensor& n) { return dequant_type(n.src[0]->type) && is_index_input(n.src[1]); }

void plan_get_rows(const Tensor&, Plan&) {}

void record_get_rows(const Tensor& n, Recorder& r) {
    const Tensor *a = n.src[0], *b = n.src[1];
    PcRows pc{r.addr(a), r.addr(b), r.addr(&n), uint32_t(a->type), uint32_t(a->ne[0]), uint32_t(b->ne[0]),
              uint32_t(b->type == DType::I64), uint32_t(a->nb[1]), uint32_t(n.nb[1])};
    // The grid types' variants: one invocation per 8 elements (a codebook entry).
    if (grid_type(a->type))
        r.dispatch1d("get_rows_" + lower_name(a->type), pc, uint64_t(a->ne[0]) / 8 * b->ne[0], {r.range(a), r.range(b)},
                     {r.range(&n)});
    else
        r.dispatch1d("get_rows", pc, uint64_t(a->ne[0]) * b->ne[0], {r.range(a), r.range(b)}, {r.range(&n)});
}

}  // namespace ls::vk
