// Host-side checks of index tensors before any kernel of the node runs, with the
// messages of core/rules/row_index_rule.h: an out-of-range row is an error reported
// before anything is written.
#pragma once
#include <cstdint>
#include <vector>

#include "core/ir/tensor.h"

namespace ls::cuda {

// Index i of an I32/I64 index tensor held as host bytes (strided along ne[0]).
int64_t host_index(const Tensor& idx, const std::vector<uint8_t>& bytes, int64_t i);
// Throws std::out_of_range("<op>: index R at position I outside [0, rows)") for the first bad one.
void check_indices(const Tensor& idx, const std::vector<uint8_t>& bytes, int64_t rows, const char* op);

}  // namespace ls::cuda
