#include "backends/vulkan/ops/row_index.h"
#include "backends/vulkan/ops/type_support.h"
#include "backends/vulkan/ops/vk_ops.h"

namespace ls::vk {

bool supports_set_rows(const Tensor& n) {
    return cache_type(n.src[2]->type) && host_readable(n.src[1]) && n.src[0]->nb[0] == 4;
}

void plan_set_rows(const Tensor& n, Plan& plan) {
    plan_row_indices(n.src[1], n.src[2]->ne[1], "set_rows", plan);
    if (row_indices_repeat(n.src[1], plan)) plan.rows_repeat.insert(&n);
}

void record_set_rows(const Tensor& n, Recorder& r) {
    const Tensor *a = n.src[0], *b = n.src[1], *d = n.src[2];
    PcRows pc{r.addr(a), r.addr(b), r.addr(d), uint32_t(d->type), uint32_t(d->ne[0]), uint32_t(b->ne[0]),
              uint32_t(b->type == DType::I64) | (r.plan.rows_repeat.count(&n) ? LS_ROWS_REPEAT : 0u), uint32_t(a->nb[1]),
              uint32_t(d->nb[1])};
    // One invocation per block of a block-quantized cache row, per element otherwise.
    const uint64_t per_row = block_size(d->type) == 32 ? d->ne[0] / 32 : d->ne[0];
    r.dispatch1d("set_rows", pc, per_row * b->ne[0], {r.range(a), r.range(b)}, {r.range(d)});
}

}  // namespace ls::vk
