#include <algorithm>
#include <vector>

#include "backends/vulkan/ops/type_support.h"
#include "backends/vulkan/ops/vk_ops.h"
#include "core/rules/row_index_rule.h"

namespace ls::vk {
namespace {

// Whether some row is named twice (then the last writer must win: LS_ROWS_REPEAT).
bool rows_repeat(const Tensor* idx, const Graph& g) {
    const uint8_t* v = index_bytes(g, idx, "set_rows");
    std::vector<int64_t> rows(size_t(idx->ne[0]));
    for (int64_t i = 0; i < idx->ne[0]; ++i) rows[size_t(i)] = row_index_at(v, size_t(idx->nb[0]), idx->type == DType::I64, i);
    std::sort(rows.begin(), rows.end());
    return std::adjacent_find(rows.begin(), rows.end()) != rows.end();
}

}  // namespace

bool supports_set_rows(const Tensor& n) {
    return cache_type(n.src[2]->type) && is_index_input(n.src[1]) && n.src[0]->nb[0] == 4;
}

// The rows were checked by core before the graph ran (check_index_inputs): nothing is written
// on a bad one.
void plan_set_rows(const Tensor& n, Plan& plan) {
    if (rows_repeat(n.src[1], *plan.graph)) plan.rows_repeat.insert(&n);
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
