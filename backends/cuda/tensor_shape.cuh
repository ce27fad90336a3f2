// Tensor shapes as kernel arguments (ne and byte strides by value) and the flattened-row
// addressing the row kernels share. Kernels over this header compile under nvcc, or with the
// host compiler over backends/cuda/emu/cuda_emu.h, which runs them thread by thread
// without a GPU.
#pragma once
#if defined(__CUDACC__)
#include <cuda_runtime.h>
#elif defined(LS_CUDA_EMU)
#include "backends/cuda/emu/cuda_emu.h"
#else
#error "CUDA device code: compile with nvcc, or with backends/cuda/emu/cuda_emu.h"
#endif

#include <cstdint>

#include "core/ir/tensor.h"

// Unrolls the loop that follows under nvcc (register arrays indexed by the loop variable stay
// in registers); the host compiler of the emulator runs it as written.
#if defined(__CUDACC__)
#define LS_UNROLL _Pragma("unroll")
#else
#define LS_UNROLL
#endif

namespace ls::cuda {

// ne and nb (bytes) of a tensor, by value.
struct Shape {
    int64_t ne[4];
    int64_t nb[4];
};

// ne and nb (bytes) of a tensor, as a kernel argument (host side).
inline Shape shape_of(const Tensor& t) {
    Shape s;
    for (int i = 0; i < 4; ++i) {
        s.ne[i] = t.ne[i];
        s.nb[i] = int64_t(t.nb[i]);
    }
    return s;
}

// Row index m of the flattened activation rows (m over ne[1], ne[2], ne[3]) -> byte offset.
__device__ inline int64_t row_offset(const Shape& s, int64_t m) {
    const int64_t i1 = m % s.ne[1], i2 = (m / s.ne[1]) % s.ne[2], i3 = m / (s.ne[1] * s.ne[2]);
    return i1 * s.nb[1] + i2 * s.nb[2] + i3 * s.nb[3];
}

}  // namespace ls::cuda
