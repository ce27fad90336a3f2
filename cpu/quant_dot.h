// SIMD (xsimd, AVX2 where compiled for it) dot products of quantized weight rows with
// quantized activation rows. Each has its scalar twin in core/quant.h (vec_dot_ref) and a
// test comparing them.
#pragma once
#include <cstdint>

#include "core/dtype.h"

namespace ls::cpu {

// Same contract as ls::vec_dot_ref, fast. Falls back to vec_dot_ref for pairs without a
// SIMD kernel.
float vec_dot(DType w, const void* wrow, const void* arow, int64_t n);
// Computes nr dot products of nr consecutive weight rows (stride wstride bytes) with one
// activation row: out[r] = vec_dot(w, wrow + r*wstride, arow, n). Lets kernels reuse the
// loaded activation block across rows.
void vec_dot_rows(DType w, const void* wrow, size_t wstride, int nr, const void* arow, int64_t n, float* out);
// Fast quantization of an activation row to vec_dot_type (Q8_0, Q8_1, Q8_K, F16).
void quantize_row_act(DType t, const float* src, void* dst, int64_t n);
// Dequantize a row to F32 (fast where it matters: F16, Q8_0, Q4_0 for KV caches).
void dequantize_row_fast(DType t, const void* src, float* dst, int64_t n);

}  // namespace ls::cpu
