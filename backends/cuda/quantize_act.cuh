// The activation quantizers of mul_mat and mul_mat_id (core/ref/mul_mat.cpp, step 1). A
// header of kernels only, so that tests/backends/test_cuda_emu.cpp runs them on the host
// against quantize_row byte for byte.
#pragma once

#include "backends/cuda/block_reduce.cuh"
#include "backends/cuda/quant_device.cuh"
#include "backends/cuda/tensor_shape.cuh"

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

// The 8-bit dot types (Q8_0, Q8_1, Q8_K: every weight type's but Q4_0's), a warp per block:
// lane l quantizes element l of a 32-element block, elements 8l..8l+7 of a Q8_K block. The
// arithmetic is quant_block's, element by element: the absmax is a maximum over the block
// (max_ never takes a NaN, so any order gives it), scale and rounding are per element, and
// the block sums are integers. quantize_act_kernel runs a block on one thread, its loads one
// after another: on an H200 a decode step's mul_mat of a 1024-wide row into 640 q4_k rows
// (the row quantized to four Q8_K blocks, four threads) took 23 us, the same matvec of a
// 640-wide row whose quantized row an earlier mul_mat left 5.6 us.
// Each lane's part of the absmax starts, as quant_block's scan does, at max_(0, |x|), which is
// never NaN, so warp_max over the lanes is that maximum exactly.
constexpr int kQuantWarps = 4;
// Block b of the row at px into the quantized row arow, by the calling warp (every lane; px
// may be shared memory: rms_norm's fused form quantizes the row it normalized there).
__device__ inline void quantize_block_warp(DType at, const float* px, uint8_t* arow, int64_t b, int lane) {
    if (at == DType::Q8_K) {
        auto& blk = reinterpret_cast<cudaq::BlockQ8_K*>(arow)[b];
        const float* xb = px + b * cudaq::QK_K + 8 * lane;
        float v[8], amax = 0;
        for (int k = 0; k < 8; ++k) v[k] = xb[k];
        for (int k = 0; k < 8; ++k) amax = cudaq::max_(amax, cudaq::fabs_(v[k]));
        amax = warp_max(amax);
        const float iscale = amax == 0 ? 0.0f : 127.0f / amax;
        int sum = 0;
        for (int k = 0; k < 8; ++k) {
            const int8_t q = amax == 0 ? int8_t(0) : static_cast<int8_t>(cudaq::rne(v[k] * iscale));
            blk.qs[8 * lane + k] = q;
            sum += q;
        }
        sum += __shfl_xor_sync(0xffffffffu, sum, 1);  // a bsum is 16 elements: two lanes
        if (lane % 2 == 0) blk.bsums[lane / 2] = static_cast<int16_t>(sum);
        if (lane == 0) blk.d = amax == 0 ? 0.0f : 1.0f / iscale;
        return;
    }
    const float xv = px[b * cudaq::QK + lane];
    const float amax = warp_max(cudaq::max_(0.0f, cudaq::fabs_(xv)));
    const float d = amax / 127.0f;
    const float id = amax != 0.0f ? 127.0f / amax : 0.0f;
    const int8_t q = static_cast<int8_t>(cudaq::rne(xv * id));
    if (at == DType::Q8_1) {
        auto& blk = reinterpret_cast<cudaq::BlockQ8_1*>(arow)[b];
        blk.qs[lane] = q;
        int sum = q;
        for (int o = 16; o > 0; o >>= 1) sum += __shfl_xor_sync(0xffffffffu, sum, o);
        if (lane == 0) blk.d = cudaq::f2h(d), blk.s = cudaq::f2h(d * static_cast<float>(sum));
    } else {
        auto& blk = reinterpret_cast<cudaq::BlockQ8_0*>(arow)[b];
        blk.qs[lane] = q;
        if (lane == 0) blk.d = cudaq::f2h(d);
    }
}
// The dot types quantize_block_warp writes.
inline bool warp_quantized(DType at) { return at == DType::Q8_0 || at == DType::Q8_1 || at == DType::Q8_K; }

__global__ void __launch_bounds__(32 * kQuantWarps) quantize_act_warp_kernel(DType at, const uint8_t* x, Shape sx, uint8_t* act,
                                                                            int64_t act_row_bytes, int64_t n_blocks, int64_t n_rows) {
    const int64_t wid = int64_t(blockIdx.x) * kQuantWarps + threadIdx.x / 32;
    if (wid >= n_blocks * n_rows) return;  // the whole warp
    const int64_t m = wid / n_blocks, b = wid % n_blocks;
    quantize_block_warp(at, reinterpret_cast<const float*>(x + row_offset(sx, m)), act + m * act_row_bytes, b, int(threadIdx.x % 32));
}

}  // namespace
}  // namespace ls::cuda
