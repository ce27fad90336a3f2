// LS_HD marks small inline definitions that CUDA kernels share with the host code
// (backends/cuda/): __host__ __device__ under nvcc, nothing for the host compiler. Sharing
// the definition, not a copy, is what keeps the two sides' IEEE operation sequences equal.
#pragma once
#if defined(__CUDACC__)
#define LS_HD __host__ __device__
#else
#define LS_HD
#endif
