// get_rows and set_rows check their index vector on the host (core/rules/row_index_rule.h)
// before anything is recorded: a bad index changes nothing.
#pragma once
#include <algorithm>
#include <vector>

#include "backends/vulkan/recorder.h"
#include "core/rules/row_index_rule.h"

namespace ls::vk {

inline void plan_row_indices(const Tensor* idx, int64_t rows, const char* op, Plan& plan) {
    const std::vector<uint8_t> v = plan.host_bytes(idx);
    check_row_indices(v.data(), size_t(idx->nb[0]), idx->type == DType::I64, idx->ne[0], rows, op);
}

// Whether some row is named twice (set_rows: then the last writer must win).
inline bool row_indices_repeat(const Tensor* idx, Plan& plan) {
    const std::vector<uint8_t> v = plan.host_bytes(idx);
    std::vector<int64_t> rows(size_t(idx->ne[0]));
    for (int64_t i = 0; i < idx->ne[0]; ++i)
        rows[size_t(i)] = row_index_at(v.data(), size_t(idx->nb[0]), idx->type == DType::I64, i);
    std::sort(rows.begin(), rows.end());
    return std::adjacent_find(rows.begin(), rows.end()) != rows.end();
}

}  // namespace ls::vk
