#include <cmath>
#include <stdexcept>
#include <string>

#include "core/rules/detmath.h"
#include "core/quant/quant.h"
#include "core/ref/ref_ops.h"

namespace ls::ref {

int64_t index_at(const Tensor& idx, int64_t i) {
    const uint8_t* p = idx.data() + i * idx.nb[0];
    return idx.type == DType::I64 ? *reinterpret_cast<const int64_t*>(p) : *reinterpret_cast<const int32_t*>(p);
}

void check_row_indices(const Tensor& idx, int64_t rows, const char* op) {
    for (int64_t i = 0; i < idx.ne[0]; ++i) {
        int64_t r = index_at(idx, i);
        if (r < 0 || r >= rows)
            throw std::out_of_range(std::string(op) + ": index " + std::to_string(r) + " at position " +
                                    std::to_string(i) + " outside [0, " + std::to_string(rows) + ")");
    }
}

void row_to_f32(DType t, const void* src, float* dst, int64_t n) { dequantize_row(t, src, dst, n); }
void row_from_f32(DType t, const float* src, void* dst, int64_t n) { quantize_row(t, src, dst, n); }

float gelu_tanh(float x) { return det_gelu(x); }

}  // namespace ls::ref
