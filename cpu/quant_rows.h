// Fast row conversions for the CPU backend, each bit-exact with its reference in
// core/quant/quant.h (tests/ops/test_quant.cpp holds them to it).
#pragma once
#include <cstdint>

#include "core/quant/dtype.h"

namespace ls::cpu {

// Quantization of an activation row to Q8_0, Q8_1, Q8_K or F16 (others: the reference).
void quantize_row_act(DType t, const float* src, void* dst, int64_t n);
// Dequantize a row to F32 (fast for F16, Q8_0, Q4_0, Q5_0: caches and embeddings).
void dequantize_row_fast(DType t, const void* src, float* dst, int64_t n);

}  // namespace ls::cpu
