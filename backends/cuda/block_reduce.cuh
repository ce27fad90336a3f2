// Block- and warp-wide reductions of the op kernels. They are only used where the order
// does not change the result (max of floats, integer sums) or where the definition allows
// any order (double sums of exact products, core/rules/detmath.h); the trees are fixed
// anyway, so a run repeats its bits.
#pragma once
#include <cmath>
#include <cstdint>

#include "backends/cuda/tensor_shape.cuh"
#include "core/rules/detmath.h"

namespace ls::cuda {

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
