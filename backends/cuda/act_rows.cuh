// The activation side of mul_mat and mul_mat_id: flattened activation rows and their
// quantization to the weight type's dot type (core/ref/mul_mat.cpp, step 1).
#pragma once

#include "backends/cuda/elementwise.cuh"
#include "backends/cuda/quant_device.cuh"

namespace ls::cuda {
namespace {

// Step 1, as ref::mul_mat: every activation row quantized to the weight type's dot type
// (quantize_row's block quantizers, one thread per block, serially inside the block).
__global__ void quantize_act_kernel(DType at, int block_elems, const uint8_t* x, Shape sx, uint8_t* act, int64_t act_row_bytes,
                                    int64_t n_blocks) {
    const int64_t m = blockIdx.x;
    const float* px = reinterpret_cast<const float*>(x + row_offset(sx, m));
    uint8_t* arow = act + m * act_row_bytes;
    for (int64_t b = threadIdx.x; b < n_blocks; b += blockDim.x) cudaq::quant_block(at, px + b * block_elems, arow, b);
}

}  // namespace
}  // namespace ls::cuda
