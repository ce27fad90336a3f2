// Device-side helpers shared by the op kernels: tensor shapes as kernel arguments and
// block-wide reductions. Reductions here are only used where the order does not change the
// result (max of floats, integer sums) or where the definition allows any order (double sums
// of exact products, core/rules/detmath.h).
//
// Kernels over this header compile under nvcc, or with the host compiler over
// backends/cuda/emu/cuda_emu.h, which runs them thread by thread without a GPU.
#pragma once
#if defined(__CUDACC__)
#include <cuda_runtime.h>
#elif defined(LS_CUDA_EMU)
#include "backends/cuda/emu/cuda_emu.h"
#else
#error "CUDA device code: compile with nvcc, or with backends/cuda/emu/cuda_emu.h"
#endif

#include <cmath>
#include <cstdint>

#include "core/rules/detmath.h"

namespace ls::cuda {

// ne and nb (bytes) of a tensor, by value.
struct Shape {
    int64_t ne[4];
    int64_t nb[4];
};

// Row index m of the flattened activation rows (m over ne[1], ne[2], ne[3]) -> byte offset.
__device__ inline int64_t row_offset(const Shape& s, int64_t m) {
    const int64_t i1 = m % s.ne[1], i2 = (m / s.ne[1]) % s.ne[2], i3 = m / (s.ne[1] * s.ne[2]);
    return i1 * s.nb[1] + i2 * s.nb[2] + i3 * s.nb[3];
}

// Sum over the block (blockDim.x a multiple of 32, at most 1024), result in every thread.
// shared: 32 doubles. Fixed tree: the same bits on every run.
__device__ inline double block_sum(double v, double* shared) {
    for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffffu, v, o);
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, nw = blockDim.x / 32;
    __syncthreads();  // shared may still be read by a previous call
    if (lane == 0) shared[warp] = v;
    __syncthreads();
    if (warp == 0) {
        v = lane < nw ? shared[lane] : 0.0;
        for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffffu, v, o);
        if (lane == 0) shared[0] = v;
    }
    __syncthreads();
    return shared[0];
}

// Max over the block (exact in any order), result in every thread. shared: 32 floats.
__device__ inline float block_max(float v, float* shared) {
    for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_down_sync(0xffffffffu, v, o));
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, nw = blockDim.x / 32;
    __syncthreads();
    if (lane == 0) shared[warp] = v;
    __syncthreads();
    if (warp == 0) {
        v = lane < nw ? shared[lane] : -INFINITY;
        for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_down_sync(0xffffffffu, v, o));
        if (lane == 0) shared[0] = v;
    }
    __syncthreads();
    return shared[0];
}

// Warp sum of doubles (fixed tree), result in lane 0.
__device__ inline double warp_sum(double v) {
    for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffffu, v, o);
    return v;
}

}  // namespace ls::cuda
