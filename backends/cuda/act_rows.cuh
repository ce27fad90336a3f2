// The activation side of mul_mat and mul_mat_id: flattened activation rows and their
// quantization to the weight type's dot type (core/ref/mul_mat.cpp, step 1).
#pragma once

#include "backends/cuda/elementwise.cuh"
#include "backends/cuda/quant_device.cuh"
#include "backends/cuda/quantize_act.cuh"

namespace ls::cuda {
namespace {

// Step 1 for n_rows rows of x into act: the warp kernel for the 8-bit types, else a thread per block.
inline void launch_quantize_act(DType at, const uint8_t* x, const Shape& sx, uint8_t* act, int64_t act_row_bytes, int64_t K,
                                int64_t n_rows, cudaStream_t stream) {
    const int be = cudaq::quant_block_elems(at);
    const int64_t nb = K / be;
    if (warp_quantized(at)) {
        const int64_t warps = nb * n_rows;
        LS_LAUNCH(quantize_act_warp_kernel, unsigned((warps + kQuantWarps - 1) / kQuantWarps), 32 * kQuantWarps, stream)(
            at, x, sx, act, act_row_bytes, nb, n_rows);
    } else {
        LS_LAUNCH(quantize_act_kernel, unsigned(n_rows), 128, stream)(at, be, x, sx, act, act_row_bytes, nb);
    }
}

}  // namespace
}  // namespace ls::cuda
