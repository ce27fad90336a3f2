#include <cmath>
#include <stdexcept>
#include <string>

#include "core/rules/canon.h"
#include "core/quant/quant.h"
#include "core/ref/ref_ops.h"
#include "core/rules/row_index_rule.h"

namespace ls::ref {

int64_t index_at(const Tensor& idx, int64_t i) { return row_index_at(idx.data(), idx.nb[0], idx.type == DType::I64, i); }

void check_row_indices(const Tensor& idx, int64_t rows, const char* op) {
    ls::check_row_indices(idx.data(), idx.nb[0], idx.type == DType::I64, idx.ne[0], rows, op);
}

void row_to_f32(DType t, const void* src, float* dst, int64_t n) { dequantize_row(t, src, dst, n); }
void row_from_f32(DType t, const float* src, void* dst, int64_t n) { quantize_row(t, src, dst, n); }

float gelu_tanh(float x) { return det_gelu(x); }

}  // namespace ls::ref
