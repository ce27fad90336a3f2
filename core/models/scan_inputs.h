// The inputs every recurrent op of a ubatch reads (SEMANTICS.md section 2): the ubatch's
// tokens grouped into runs by sequence (first appearance order, positions increasing inside a
// run; a run starting at position 0 resets its slot), as the graph inputs scan_runs [4, runs]
// (slot, first, count, reset) and scan_order [T]. Slots and reset flags are inputs of the
// graph, never constants of the ops.
#pragma once
#include "core/ir/graph.h"
#include "core/models/model.h"

namespace ls {

struct ScanInputs {
    Tensor* runs;
    Tensor* order;
};
ScanInputs scan_inputs(Graph& g, const Ubatch& ub);

// conv1d_scan's kernel (K, C) as F32: w itself, or, for a file that stores it as f16, bf16 or
// quantized, its rows gathered by get_rows (which dequantizes); `rows` keeps the graph's
// all-rows index input between layers (null at first).
Tensor* conv_kernel_f32(Graph& g, Tensor* w, Tensor*& rows);

}  // namespace ls
