// get_rows and set_rows check their index vector on the host (core/rules/row_index_rule.h)
// before anything is recorded: a bad index changes nothing.
#pragma once
#include <algorithm>
#include <cstring>
#include <vector>

#include "backends/vulkan/recorder.h"
#include "core/rules/row_index_rule.h"

namespace ls::vk {

// Returns whether some row is named twice.
inline bool plan_row_indices(const Tensor* idx, int64_t rows, const char* op, Plan& plan) {
    const std::vector<uint8_t> v = plan.host_bytes(idx);
    check_row_indices(v.data(), size_t(idx->nb[0]), idx->type == DType::I64, idx->ne[0], rows, op);
    std::vector<int64_t> seen(size_t(idx->ne[0]));
    for (int64_t i = 0; i < idx->ne[0]; ++i) {
        const uint8_t* e = v.data() + size_t(i) * size_t(idx->nb[0]);
        if (idx->type == DType::I64) {
            std::memcpy(&seen[size_t(i)], e, 8);
        } else {
            int32_t x;
            std::memcpy(&x, e, 4);
            seen[size_t(i)] = x;
        }
    }
    std::sort(seen.begin(), seen.end());
    return std::adjacent_find(seen.begin(), seen.end()) != seen.end();
}

}  // namespace ls::vk
