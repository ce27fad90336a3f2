#include <stdexcept>
#include <string>

#include "backends/cuda/kernels.cuh"
#include "backends/cuda/qdev.h"
#include "core/quant.h"

namespace ls::cuda {
namespace {

// Row index m of the flattened activation rows (m over ne[1], ne[2], ne[3]) -> byte offset.
__device__ inline int64_t row_offset(const Shape& s, int64_t m) {
    const int64_t i1 = m % s.ne[1], i2 = (m / s.ne[1]) % s.ne[2], i3 = m / (s.ne[1] * s.ne[2]);
    return i1 * s.nb[1] + i2 * s.nb[2] + i3 * s.nb[3];
}

// Step 1, as ref::mul_mat: every activation row quantized to the weight type's dot type
// (quantize_row's block quantizers, one thread per block, serially inside the block).
__global__ void quantize_act_kernel(DType at, int block_elems, const uint8_t* x, Shape sx, uint8_t* act, int64_t act_row_bytes,
                                    int64_t n_blocks) {
    const int64_t m = blockIdx.x;
    const float* px = reinterpret_cast<const float*>(x + row_offset(sx, m));
    uint8_t* arow = act + m * act_row_bytes;
    for (int64_t b = threadIdx.x; b < n_blocks; b += blockDim.x) cudaq::quant_block(at, px + b * block_elems, arow, b);
}

constexpr int kWarps = 4;  // activation rows per thread block (one warp each)

// Step 2, quantized weights: one warp per (weight row n, activation row m). Lane l computes
// the exact integer sums of blocks l, l+32, ...; then every lane runs the float chain over
// the blocks in order with those sums (identical values in every lane), exactly
// cudaq::row_dot, which tests/test_cuda_host.cpp holds bit-identical to vec_dot_ref.
template <DType W>
__global__ void dot_q_kernel(const uint8_t* w, int64_t w_nb1, const uint8_t* act, int64_t act_row_bytes, int64_t n_mrows,
                             int64_t nb, uint8_t* dst, Shape sd) {
    using D = cudaq::WDot<W>;
    const int64_t n = blockIdx.x;
    const int64_t m = int64_t(blockIdx.y) * kWarps + threadIdx.y;
    if (m >= n_mrows) return;  // the whole warp
    const int lane = threadIdx.x;
    const auto* x = reinterpret_cast<const typename D::WB*>(w + n * w_nb1);
    const auto* y = reinterpret_cast<const typename D::AB*>(act + m * act_row_bytes);
    float sum = 0, msum = 0;
    for (int64_t b0 = 0; b0 < nb; b0 += 32) {
        cudaq::Isum mine;
        if (b0 + lane < nb) mine = D::isum(x[b0 + lane], y[b0 + lane]);
        const int cnt = int(nb - b0 < 32 ? nb - b0 : 32);
        for (int j = 0; j < cnt; ++j) {
            cudaq::Isum s;
            s.i = __shfl_sync(0xffffffffu, mine.i, j);
            s.m = __shfl_sync(0xffffffffu, mine.m, j);
            D::step(x[b0 + j], y[b0 + j], s, sum, msum);
        }
    }
    if (lane == 0) *reinterpret_cast<float*>(dst + row_offset(sd, m) + n * 4) = cudaq::finish<W>(sum, msum);
}

// Step 2, float weights: exact products summed in double (any order), rounded once.
__global__ void dot_f_kernel(DType wt, const uint8_t* w, int64_t w_nb1, const uint8_t* act, int64_t act_row_bytes, int64_t n_mrows,
                             int64_t K, uint8_t* dst, Shape sd) {
    const int64_t n = blockIdx.x;
    const int64_t m = int64_t(blockIdx.y) * kWarps + threadIdx.y;
    if (m >= n_mrows) return;
    const uint8_t* wrow = w + n * w_nb1;
    const uint8_t* arow = act + m * act_row_bytes;
    double s = 0;
    for (int64_t e = threadIdx.x; e < K; e += 32) s += cudaq::prod_f(wt, wrow, arow, e);
    s = warp_sum(s);
    if (threadIdx.x == 0) *reinterpret_cast<float*>(dst + row_offset(sd, m) + n * 4) = float(s);
}

template <DType W> void launch_q(dim3 grid, dim3 block, cudaStream_t st, const Tensor& w, const uint8_t* act, int64_t arb,
                                 int64_t n_mrows, const Tensor& dst) {
    const int64_t nb = w.ne[0] / block_size(W);
    dot_q_kernel<W><<<grid, block, 0, st>>>(dptr(w), int64_t(w.nb[1]), act, arb, n_mrows, nb, dptr(dst), shape_of(dst));
}

}  // namespace

void mul_mat(const Tensor& dst, Ctx& ctx) {
    const Tensor& w = *dst.src[0];
    const Tensor& x = *dst.src[1];
    const int64_t K = w.ne[0], N = w.ne[1], n_mrows = x.ne[1] * x.ne[2] * x.ne[3];
    if (N == 0 || n_mrows == 0) return;
    const DType at = vec_dot_type(w.type);
    const int64_t arb = int64_t(row_bytes(at, K));
    auto* act = static_cast<uint8_t*>(ctx.temp(size_t(arb * n_mrows)));
    const int be = cudaq::quant_block_elems(at);
    quantize_act_kernel<<<unsigned(n_mrows), 128, 0, ctx.stream>>>(at, be, dptr(x), shape_of(x), act, arb, K / be);
    LS_CUDA_CHECK_LAUNCH("quantize_act_kernel");

    const int64_t gy = (n_mrows + kWarps - 1) / kWarps;
    if (gy > 65535) throw std::runtime_error("cuda mul_mat: " + std::to_string(n_mrows) + " activation rows exceed one launch");
    const int warps = int(n_mrows < kWarps ? n_mrows : kWarps);
    const dim3 grid{unsigned(N), unsigned(gy)}, block{32u, unsigned(warps)};
    // With fewer than kWarps rows the block has fewer warps; blockIdx.y is then 0 and m = threadIdx.y.
    switch (w.type) {
        case DType::F32: case DType::F16: case DType::BF16:
            dot_f_kernel<<<grid, block, 0, ctx.stream>>>(w.type, dptr(w), int64_t(w.nb[1]), act, arb, n_mrows, K, dptr(dst), shape_of(dst));
            break;
        case DType::Q4_0: launch_q<DType::Q4_0>(grid, block, ctx.stream, w, act, arb, n_mrows, dst); break;
        case DType::Q4_1: launch_q<DType::Q4_1>(grid, block, ctx.stream, w, act, arb, n_mrows, dst); break;
        case DType::Q5_0: launch_q<DType::Q5_0>(grid, block, ctx.stream, w, act, arb, n_mrows, dst); break;
        case DType::Q5_1: launch_q<DType::Q5_1>(grid, block, ctx.stream, w, act, arb, n_mrows, dst); break;
        case DType::Q8_0: launch_q<DType::Q8_0>(grid, block, ctx.stream, w, act, arb, n_mrows, dst); break;
        case DType::Q2_K: launch_q<DType::Q2_K>(grid, block, ctx.stream, w, act, arb, n_mrows, dst); break;
        case DType::Q3_K: launch_q<DType::Q3_K>(grid, block, ctx.stream, w, act, arb, n_mrows, dst); break;
        case DType::Q4_K: launch_q<DType::Q4_K>(grid, block, ctx.stream, w, act, arb, n_mrows, dst); break;
        case DType::Q5_K: launch_q<DType::Q5_K>(grid, block, ctx.stream, w, act, arb, n_mrows, dst); break;
        case DType::Q6_K: launch_q<DType::Q6_K>(grid, block, ctx.stream, w, act, arb, n_mrows, dst); break;
        default: throw std::logic_error(std::string("cuda mul_mat: weight type ") + dtype_name(w.type) + " reached the kernel");
    }
    LS_CUDA_CHECK_LAUNCH("mul_mat dot kernel");
}

}  // namespace ls::cuda
