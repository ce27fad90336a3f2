// Single-sequence-only forms of the CPU recurrent scan, for `lockstep bench --scan-vs-single`
// only: the batched op (cpu/ops/delta_scan.cpp) must cost no more than this on one sequence
// (SEMANTICS.md section 2). Same arithmetic; they take the first run's slot and reset flag and
// scan the tokens in ubatch order.
#pragma once
#include "core/ir/tensor.h"

namespace ls::cpu {
void delta_scan_single_sequence(const Tensor& dst);
}  // namespace ls::cpu
