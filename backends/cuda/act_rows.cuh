// The activation side of mul_mat and mul_mat_id: flattened activation rows and their
// quantization to the weight type's dot type (core/ref/mul_mat.cpp, step 1).
#pragma once
#include <type_traits>

#include "backends/cuda/kernels.cuh"
#include "backends/cuda/qdev.h"

namespace ls::cuda {
namespace {

// Row index m of the flattened activation rows (m over ne[1], ne[2], ne[3]) -> byte offset.
__device__ inline int64_t row_offset(const Shape& s, int64_t m) {
    const int64_t i1 = m % s.ne[1], i2 = (m / s.ne[1]) % s.ne[2], i3 = m / (s.ne[1] * s.ne[2]);
    return i1 * s.nb[1] + i2 * s.nb[2] + i3 * s.nb[3];
}

// Step 1, as ref::mul_mat: every activation row quantized to the weight type's dot type
// (quantize_row's block quantizers, one thread per block, serially inside the block).
__global__ void quantize_act_kernel(DType at, int block_elems, const uint8_t* x, Shape sx, uint8_t* act, int64_t act_row_bytes,
                                    int64_t n_blocks) {
    const int64_t m = blockIdx.x;
    const float* px = reinterpret_cast<const float*>(x + row_offset(sx, m));
    uint8_t* arow = act + m * act_row_bytes;
    for (int64_t b = threadIdx.x; b < n_blocks; b += blockDim.x) cudaq::quant_block(at, px + b * block_elems, arow, b);
}

// The quantized weight types of the integer path: calls f(std::integral_constant<DType, t>{})
// so that a kernel template can be instantiated per type; false for any other type.
template <class F>
bool with_quant_weight(DType t, F&& f) {
    switch (t) {
#define LS_QW(T) \
    case DType::T: f(std::integral_constant<DType, DType::T>{}); return true;
        LS_QW(Q4_0) LS_QW(Q4_1) LS_QW(Q5_0) LS_QW(Q5_1) LS_QW(Q8_0) LS_QW(Q2_K) LS_QW(Q3_K) LS_QW(Q4_K) LS_QW(Q5_K) LS_QW(Q6_K)
#undef LS_QW
        default: return false;
    }
}

}  // namespace
}  // namespace ls::cuda
