// Strided loops whose loads are issued ahead of their stores or uses, shared by the row
// kernels (norms) and the warp reductions (block_reduce.cuh).
#pragma once
#include <cstdint>

#include "backends/cuda/tensor_shape.cuh"

namespace ls::cuda {

// for (i = first; i < n; i += step) store(i, load(i)), kAhead indices at a time: their loads
// first, into registers, then their stores. A loop of load, store waits a whole memory
// latency per index, since the compiler cannot move a load above a store that may alias it:
// a block's 16 strided elements of a 4096-wide rms_norm row one after another took 12 us on
// an H200. Each index's load still comes before its own store.
template <int kAhead = 8, class Load, class Store>
__device__ inline void strided_ahead(int64_t first, int64_t n, int64_t step, Load load, Store store) {
    using V = decltype(load(first));
    for (int64_t i = first; i < n; i += kAhead * step) {
        V v[kAhead];
LS_UNROLL
        for (int u = 0; u < kAhead; ++u)
            if (i + u * step < n) v[u] = load(i + u * step);
LS_UNROLL
        for (int u = 0; u < kAhead; ++u)
            if (i + u * step < n) store(i + u * step, v[u]);
    }
}

}  // namespace ls::cuda
