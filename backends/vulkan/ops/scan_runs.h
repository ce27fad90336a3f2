// conv1d_scan and delta_scan read their run table on the host before any state is written
// (SEMANTICS.md section 2; core/rules/scan_runs.h).
#pragma once
#include "backends/vulkan/recorder.h"
#include "core/rules/scan_runs.h"

namespace ls::vk {

inline void plan_scan_runs(const Tensor* runs, const Tensor* order, int64_t T, int64_t n_slots, const char* op, Plan& plan) {
    const std::vector<uint8_t> rb = plan.host_bytes(runs), ob = plan.host_bytes(order);
    read_scan_runs(reinterpret_cast<const int32_t*>(rb.data()), runs->ne[1], reinterpret_cast<const int32_t*>(ob.data()), T,
                   n_slots, op);
}

}  // namespace ls::vk
