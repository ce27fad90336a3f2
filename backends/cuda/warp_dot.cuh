// One quantized dot product computed by a whole warp, shared by mul_mat and mul_mat_id.
#pragma once
#include <cstdint>

#include "backends/cuda/block_reduce.cuh"
#include "backends/cuda/quant_device.cuh"

namespace ls::cuda {

// Weight row x . activation row y over nb blocks. Lane l computes the exact integer sums of
// blocks l, l+32, ...; then every lane runs the float chain over the blocks in order with
// those sums (identical values in every lane): exactly cudaq::row_dot, which
// tests/backends/test_cuda_host.cpp holds bit-identical to vec_dot_ref. All 32 lanes must call it.
template <DType W>
__device__ inline float warp_row_dot(const typename cudaq::WDot<W>::WB* x, const typename cudaq::WDot<W>::AB* y, int64_t nb, int lane) {
    using D = cudaq::WDot<W>;
    float sum = 0, msum = 0;
    for (int64_t b0 = 0; b0 < nb; b0 += 32) {
        cudaq::Isum mine;
        if (b0 + lane < nb) mine = cudaq::isum<W>(x[b0 + lane], y[b0 + lane]);
        const int cnt = int(nb - b0 < 32 ? nb - b0 : 32);
        for (int j = 0; j < cnt; ++j) {
            cudaq::Isum s;
            s.i = __shfl_sync(0xffffffffu, mine.i, j);
            s.m = __shfl_sync(0xffffffffu, mine.m, j);
            D::step(x[b0 + j], y[b0 + j], s, sum, msum);
        }
    }
    return cudaq::finish<W>(sum, msum);
}

}  // namespace ls::cuda
