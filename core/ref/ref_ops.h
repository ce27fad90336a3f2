// Reference implementations: the definition of each op. Plain loops, F32 accumulation,
// no SIMD, no threads. One file per op, named for it.
#pragma once
#include "core/ir/tensor.h"

namespace ls::ref {

#define LS_X(E, n, P) void n(const Tensor& dst);
LS_OP_LIST(LS_X)
#undef LS_X

// Checks every index of a set_rows/get_rows index tensor against [0, rows) before any row
// is touched; throws std::out_of_range naming the first bad one.
void check_row_indices(const Tensor& idx, int64_t rows, const char* op);
int64_t index_at(const Tensor& idx, int64_t i);
// Row conversions through F32 used by get_rows/set_rows/attention.
void row_to_f32(DType t, const void* src, float* dst, int64_t n);
void row_from_f32(DType t, const float* src, void* dst, int64_t n);
// mul_mat_id's check of its expert ids (all of them, before any write): std::out_of_range
// naming the first id outside [0, n_experts).
void check_expert_ids(const int32_t* ids, int64_t n, int64_t n_experts);
// One row of softmax(x * scale): the max, det_exp of the shifted values, their canon_sum,
// each quotient correctly rounded (core/rules/canon.h). The CPU backend runs rows of it on its threads.
void softmax_row(const float* x, float* y, int64_t K, float scale);
// tanh-approximated GELU, the definition every backend matches.
float gelu_tanh(float x);

}  // namespace ls::ref
