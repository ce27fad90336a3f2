// Block (de)quantization of GGUF types: the plain reference, used as the oracle for every
// backend's kernels. Block layouts follow the GGUF/ggml definitions bit for bit.
#pragma once
#include <cstdint>

#include "core/quant/dtype.h"

namespace ls {

// fp16 / bf16 scalar conversions (round to nearest even).
float fp16_to_fp32(uint16_t h);
uint16_t fp32_to_fp16(float f);
float bf16_to_fp32(uint16_t h);
uint16_t fp32_to_bf16(float f);

// Dequantizes n elements (a multiple of the block size) of type t to F32.
// Supported: F32, F16, BF16, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, Q8_K,
// IQ4_NL, IQ4_XS, MXFP4, TQ1_0, TQ2_0 and the grid i-quants (is_grid_iq).
void dequantize_row(DType t, const void* src, float* dst, int64_t n);
bool can_dequantize(DType t);
// The grid i-quants (IQ2_XXS, IQ2_XS, IQ2_S, IQ3_XXS, IQ3_S, IQ1_S, IQ1_M): run and
// dequantized, not quantized by lockstep.
inline bool is_grid_iq(DType t) {
    return t == DType::IQ2_XXS || t == DType::IQ2_XS || t == DType::IQ2_S || t == DType::IQ3_XXS || t == DType::IQ3_S ||
           t == DType::IQ1_S || t == DType::IQ1_M;
}

// Quantizes n F32 elements into type t (round-to-nearest reference quantizers).
// Supported: F32, F16, BF16, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q8_1, Q8_K, Q2_K..Q6_K, IQ4_NL,
// IQ4_XS, MXFP4, TQ1_0, TQ2_0 (round-to-nearest fits, without an importance matrix).
void quantize_row(DType t, const float* src, void* dst, int64_t n);
bool can_quantize(DType t);

// The activation type a weight type is multiplied with on the integer hot path:
// Q*_K, IQ4_XS, TQ1_0, TQ2_0, the grid i-quants -> Q8_K; Q4_0/Q5_0/Q8_0/IQ4_NL/MXFP4 -> Q8_0; Q4_1/Q5_1 -> Q8_1;
// F16 -> F16; F32/BF16 -> F32 (the pairing is documented at its definition, quant.cpp).
DType vec_dot_type(DType weight);
// True if mul_mat / mul_mat_id take weights of type t (every backend runs them): the float
// types and every quantized type with a vec_dot_type, Q8_1 and Q8_K (activation types) aside.
bool is_weight_type(DType t);

// Reference dot product of one weight row (type w) with one activation row already
// quantized to vec_dot_type(w); n elements. Exact integer sums per block, F32 scales.
float vec_dot_ref(DType w, const void* wrow, const void* arow, int64_t n);

}  // namespace ls
