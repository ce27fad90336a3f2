// The op table, from the registry rows: one entry per op, in OpId order.
#include <array>

#include "backends/vulkan/ops/vk_ops.h"

namespace ls::vk {
namespace {
constexpr std::array<OpEntry, size_t(OpId::COUNT)> kOps = {{
#define LS_X(E, n, P) {&supports_##n, &plan_##n, &record_##n},
    LS_OP_LIST(LS_X)
#undef LS_X
}};
}  // namespace

const OpEntry& op_entry(OpId op) { return kOps[size_t(op)]; }

}  // namespace ls::vk
