// The conditions several ops' supports_<op> share (backends/cuda/<op>.cu): written once so
// that ops reading the same kind of operand refuse the same tensors.
#pragma once
#include "core/ir/index_inputs.h"
#include "core/ir/tensor.h"

namespace ls::cuda {

// F32 with contiguous elements along ne[0]: the kernels read rows as float arrays.
inline bool f32_elems(const Tensor* t) { return t && t->type == DType::F32 && t->nb[0] == sizeof(float); }
// The row index types get_rows and set_rows read (core/rules/row_index_rule.h), as a graph
// input: core checks its rows on the host before the graph runs (core/ir/index_inputs.h).
inline bool index_type(const Tensor* t) { return is_index_input(t) && (t->type == DType::I32 || t->type == DType::I64); }
// An I32 graph input core checks and the launcher reads on the host (positions, sequences,
// run tables).
inline bool host_i32(const Tensor* t) { return is_index_input(t) && t->type == DType::I32; }
// KV cache element types: those set_rows writes and attention reads.
inline bool cache_type(DType t) {
    return t == DType::F32 || t == DType::F16 || t == DType::BF16 || t == DType::Q8_0 || t == DType::Q4_0;
}

}  // namespace ls::cuda
