// Runs CUDA kernels on the host, for tests on machines without a GPU (and under ASan, which
// then checks every kernel memory access the way compute-sanitizer's memcheck would). Used
// two ways: tests/backends/test_cuda_emu.cpp includes a kernel header after this one and launches
// its kernels directly, and the LOCKSTEP_CUDA_EMU build compiles the whole CUDA backend
// with the host compiler over backends/cuda/emu/cuda_runtime.h.
//
// A kernel written for nvcc (over backends/cuda/tensor_shape.cuh) compiles with the host
// compiler after this header: each CUDA thread of a block is a fiber
// on the calling thread, __syncthreads is a barrier of the block, warp shuffles exchange
// values through a barrier of the warp, and __shared__ variables are function statics
// (blocks run one after another, so one copy is the block's shared memory). A thread runs
// until it reaches a barrier, so a kernel that needs a barrier for correctness but lacks
// it is likely to be caught, and one that waits at a barrier others never reach is
// reported as a deadlock. Float intrinsics map to
// the IEEE operations they name (the build has no contraction: -ffp-contract=off). Threads
// that return early leave the block's and the warp's barriers, as exited threads do on
// sm_70 and later.
//
// What it cannot show: timing, memory coalescing, and behaviour that depends on warps
// running in lockstep without synchronization (our kernels synchronize explicitly).
#pragma once
#ifndef LS_CUDA_EMU
#define LS_CUDA_EMU 1
#endif

#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <type_traits>

namespace ls::emu {

struct Dim3 {
    unsigned x = 1, y = 1, z = 1;
};

extern Dim3 thread_idx, block_idx, block_dim, grid_dim;

void syncthreads();
// The calling thread's warp: every live lane passes its value, gets lane src's.
uint64_t warp_exchange(uint64_t bits, unsigned src_lane);

// The calling thread's warp: every live lane passes `bytes` (at most kGatherBytes) bytes and
// gets all 32 lanes' in lane order. What a warp-wide instruction (mma) sees of its operands.
constexpr unsigned kGatherBytes = 32;
void warp_gather(const void* mine, unsigned bytes, void* all);

// Runs body in every thread of every block of the grid (blocks one at a time, the threads of
// a block as fibers of the calling thread; not reentrant).
void launch(Dim3 grid, Dim3 block, const std::function<void()>& body);

template <class T> T shuffle(T v, unsigned src_lane) {
    static_assert(std::is_trivially_copyable_v<T> && sizeof(T) <= 8, "shuffled values are at most 8 bytes");
    uint64_t b = 0;
    std::memcpy(&b, &v, sizeof(T));
    b = warp_exchange(b, src_lane);
    T r;
    std::memcpy(&r, &b, sizeof(T));
    return r;
}
inline unsigned lane_id() { return (thread_idx.x + block_dim.x * (thread_idx.y + block_dim.y * thread_idx.z)) % 32; }

}  // namespace ls::emu

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __launch_bounds__(...)
#define __restrict__ __restrict
#define __shared__ static
#define threadIdx (::ls::emu::thread_idx)
#define blockIdx (::ls::emu::block_idx)
#define blockDim (::ls::emu::block_dim)
#define gridDim (::ls::emu::grid_dim)

inline void __syncthreads() { ls::emu::syncthreads(); }
template <class T> T __shfl_sync(unsigned, T v, int src, int = 32) { return ls::emu::shuffle(v, unsigned(src) % 32); }
template <class T> T __shfl_down_sync(unsigned, T v, unsigned d, int = 32) {
    const unsigned l = ls::emu::lane_id();
    return ls::emu::shuffle(v, l + d < 32 ? l + d : l);
}
template <class T> T __shfl_xor_sync(unsigned, T v, int m, int = 32) {
    return ls::emu::shuffle(v, (ls::emu::lane_id() ^ unsigned(m)) % 32);
}

// Fibers switch only at barriers, so a read-modify-write is atomic as it stands.
template <class T> T atomicAdd(T* p, T v) {
    const T old = *p;
    *p = old + v;
    return old;
}

inline float __fadd_rn(float a, float b) { return a + b; }
inline float __fsub_rn(float a, float b) { return a - b; }
inline float __fmul_rn(float a, float b) { return a * b; }
inline float __fdiv_rn(float a, float b) { return a / b; }
inline float __fsqrt_rn(float a) { return std::sqrt(a); }
// No __fmaf_rn: the kernels never fuse (core/rules/canon.h rule 2), so a use fails to build here.
