// One quantized dot product computed by a whole warp, shared by mul_mat and mul_mat_id.
#pragma once
#include <cstdint>

#include "backends/cuda/block_reduce.cuh"
#include "backends/cuda/quant_device.cuh"

namespace ls::cuda {

// Weight row x . activation row y over nb blocks. The warp takes 32 / S blocks at a time
// (S = sub-blocks per block: 1 for the 32-element types, 8 or 16 for the 256-element ones),
// lane l the integer part of sub-block l % S of block l / S (cudaq::sub_isum): so the lanes
// read neighbouring bytes, and a block's S lanes add their exact parts (xor shuffles within
// the S-lane segment; integers, so the grouping does not matter). Then every lane runs the
// float chain over those blocks in order (identical values in every lane), the blocks' terms
// computed beforehand by their own lanes where a step is one add per chain: exactly
// cudaq::row_dot, which tests/backends/test_cuda_host.cpp holds bit-identical to
// vec_dot_ref. All 32 lanes must call it.
// Whether a type's step adds one term to each chain (every type but Q4_1 and Q5_1, whose
// step adds two terms to the same chain, in turn).
template <DType W> constexpr bool kStepIsOneAdd = W != DType::Q4_1 && W != DType::Q5_1;

// The integer part of the lane's share of block x . y (sub-block lane % S), summed over the
// block's S lanes. A Q4_K block at a 16-byte aligned address (every block of a row that
// starts at one) takes the wide loads; the same integers either way. All 32 lanes must call
// it; a lane past the row (live false) adds zeros.
template <DType W>
__device__ inline cudaq::Isum warp_block_isum(const typename cudaq::WDot<W>::WB& x, const typename cudaq::WDot<W>::AB& y, bool live,
                                              int lane) {
    constexpr int S = cudaq::kSubsPerBlock<W>;
    static_assert(S >= 1 && 32 % S == 0, "a block's sub-blocks must tile the warp");
    const int sub = lane % S;
    cudaq::Isum mine;
    if (live) {
        if constexpr (W == DType::Q4_K)
            mine = reinterpret_cast<uintptr_t>(&x) % 16 == 0 ? cudaq::q4k_lane_isum(x, y, sub) : cudaq::sub_isum<W>(x, y, sub);
        else
            mine = cudaq::sub_isum<W>(x, y, sub);
    }
    for (int o = S / 2; o >= 1; o /= 2) {
        mine.i += __shfl_xor_sync(0xffffffffu, mine.i, o);
        if constexpr (cudaq::WDot<W>::has_min) mine.m += __shfl_xor_sync(0xffffffffu, mine.m, o);
    }
    return mine;
}

template <DType W>
__device__ inline float warp_row_dot(const typename cudaq::WDot<W>::WB* x, const typename cudaq::WDot<W>::AB* y, int64_t nb, int lane) {
    using D = cudaq::WDot<W>;
    constexpr int S = cudaq::kSubsPerBlock<W>, kPer = 32 / S;
    const int jb = lane / S;
    float sum = 0, msum = 0;
    for (int64_t b0 = 0; b0 < nb; b0 += kPer) {
        const bool live = b0 + jb < nb;
        const cudaq::Isum mine = warp_block_isum<W>(x[live ? b0 + jb : 0], y[live ? b0 + jb : 0], live, lane);
        const int cnt = int(nb - b0 < kPer ? nb - b0 : kPer);
        if constexpr (kStepIsOneAdd<W>) {
            // Each block's term(s), (d_w * d_a) * float(isum), by its own lanes at once: the
            // step run on zero sums gives 0 + term, the term itself (a -0 turns +0, which
            // adds the same: a chain that starts at +0 never holds -0). The chain is adds.
            float t = 0, tm = 0;
            if (b0 + jb < nb) D::step(x[b0 + jb], y[b0 + jb], mine, t, tm);
            for (int j = 0; j < cnt; ++j) {
                sum = __fadd_rn(sum, __shfl_sync(0xffffffffu, t, j * S));
                if constexpr (D::has_min) msum = __fadd_rn(msum, __shfl_sync(0xffffffffu, tm, j * S));
            }
        } else {
            for (int j = 0; j < cnt; ++j) {
                cudaq::Isum s;
                s.i = __shfl_sync(0xffffffffu, mine.i, j * S);
                if constexpr (D::has_min) s.m = __shfl_sync(0xffffffffu, mine.m, j * S);
                D::step(x[b0 + j], y[b0 + j], s, sum, msum);
            }
        }
    }
    return cudaq::finish<W>(sum, msum);
}

}  // namespace ls::cuda
