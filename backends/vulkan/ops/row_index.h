// get_rows and set_rows check their index vector on the host (core/rules/row_index_rule.h)
// before anything is recorded: a bad index changes nothing.
#pragma once
#include "backends/vulkan/recorder.h"
#include "core/rules/row_index_rule.h"

namespace ls::vk {

inline void plan_row_indices(const Tensor* idx, int64_t rows, const char* op, Plan& plan) {
    const std::vector<uint8_t> v = plan.host_bytes(idx);
    check_row_indices(v.data(), size_t(idx->nb[0]), idx->type == DType::I64, idx->ne[0], rows, op);
}

}  // namespace ls::vk
