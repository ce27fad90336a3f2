#include <stdexcept>
#include <string>

#include "backends/cuda/act_rows.cuh"
#include "backends/cuda/kernels.cuh"
#include "backends/cuda/qdev.h"
#include "backends/cuda/warp_dot.cuh"
#include "core/quant.h"

namespace ls::cuda {
namespace {

// Below the tiled kernel: a block takes kWarps weight rows (one warp each) and kMRows
// activation rows (each warp goes through them in turn, the weight row's blocks staying in
// L1). A block of one warp would cap an SM at 32 warps.
constexpr int kWarps = 4, kMRows = 4;

// Step 2, quantized weights, few activation rows (decode): one warp per (weight row n,
// activation row m), warp_row_dot.
template <DType W>
__global__ void __launch_bounds__(32 * kWarps) dot_q_kernel(const uint8_t* w, int64_t w_nb1, int64_t N, const uint8_t* act,
                                                            int64_t act_row_bytes, int64_t n_mrows, int64_t nb, uint8_t* dst,
                                                            Shape sd) {
    using D = cudaq::WDot<W>;
    const int64_t n = int64_t(blockIdx.x) * kWarps + threadIdx.y;
    if (n >= N) return;  // the whole warp
    const int lane = threadIdx.x;
    const auto* x = reinterpret_cast<const typename D::WB*>(w + n * w_nb1);
    const int64_t m0 = int64_t(blockIdx.y) * kMRows, m1 = m0 + kMRows < n_mrows ? m0 + kMRows : n_mrows;
    for (int64_t m = m0; m < m1; ++m) {
        const auto* y = reinterpret_cast<const typename D::AB*>(act + m * act_row_bytes);
        const float r = warp_row_dot<W>(x, y, nb, lane);
        if (lane == 0) *reinterpret_cast<float*>(dst + row_offset(sd, m) + n * 4) = r;
    }
}

// Step 2, quantized weights, many activation rows (prefill): a tile of kTN weight rows x
// kTM activation rows per thread block. Each stage copies kKB consecutive blocks of every
// row of the tile into shared memory, so a weight block is read from memory once per kTM
// activation rows instead of once per row. Every thread owns kR outputs and walks the
// blocks in order with D::isum / D::step, so each output is still exactly cudaq::row_dot's
// chain (the order of blocks is the only order there is; the integer sums are exact).
constexpr int kTN = 32, kTM = 32, kTileThreads = 256, kR = kTN * kTM / kTileThreads;
// Blocks per stage: 4 of the 32-element types, 1 of the 256-element K-quants.
template <DType W> __host__ __device__ constexpr int tile_kb() {
    return W == DType::Q4_0 || W == DType::Q4_1 || W == DType::Q5_0 || W == DType::Q5_1 || W == DType::Q8_0 ? 4 : 1;
}

template <DType W>
__global__ void __launch_bounds__(kTileThreads) dot_q_tiled_kernel(const uint8_t* w, int64_t w_nb1, int64_t N, const uint8_t* act,
                                                                   int64_t act_row_bytes, int64_t n_mrows, int64_t nb,
                                                                   uint8_t* dst, Shape sd) {
    using D = cudaq::WDot<W>;
    using WB = typename D::WB;
    using AB = typename D::AB;
    constexpr int KB = tile_kb<W>();
    static_assert(sizeof(WB) % 2 == 0 && sizeof(AB) % 2 == 0, "blocks are copied as 16-bit words");
    __shared__ WB ws[kTN][KB];
    __shared__ AB as[kTM][KB];
    const int64_t n0 = int64_t(blockIdx.x) * kTN, m0 = int64_t(blockIdx.y) * kTM;
    const int tid = threadIdx.x, tn = tid % kTN, tm = tid / kTN;  // rows tm, tm + 8, ...
    constexpr int kRowStep = kTileThreads / kTN;
    float sum[kR], msum[kR];
    for (int r = 0; r < kR; ++r) sum[r] = msum[r] = 0;
    for (int64_t b0 = 0; b0 < nb; b0 += KB) {
        const int kb = int(nb - b0 < KB ? nb - b0 : KB);
        // Stage: 16-bit words (block sizes and row strides are even); rows past the
        // matrix and blocks past the row are zero (their results are never stored).
        constexpr int WW = int(sizeof(WB) / 2), AW = int(sizeof(AB) / 2);
        for (int i = tid; i < kTN * KB * WW; i += kTileThreads) {
            const int r = i / (KB * WW), j = (i / WW) % KB, o = i % WW;
            uint16_t v = 0;
            if (n0 + r < N && j < kb) v = reinterpret_cast<const uint16_t*>(w + (n0 + r) * w_nb1 + (b0 + j) * int64_t(sizeof(WB)))[o];
            reinterpret_cast<uint16_t*>(&ws[r][j])[o] = v;
        }
        for (int i = tid; i < kTM * KB * AW; i += kTileThreads) {
            const int r = i / (KB * AW), j = (i / AW) % KB, o = i % AW;
            uint16_t v = 0;
            if (m0 + r < n_mrows && j < kb)
                v = reinterpret_cast<const uint16_t*>(act + (m0 + r) * act_row_bytes + (b0 + j) * int64_t(sizeof(AB)))[o];
            reinterpret_cast<uint16_t*>(&as[r][j])[o] = v;
        }
        __syncthreads();
        for (int j = 0; j < kb; ++j)
            for (int r = 0; r < kR; ++r) {
                const AB& y = as[tm + r * kRowStep][j];
                const cudaq::Isum s = D::isum(ws[tn][j], y);
                D::step(ws[tn][j], y, s, sum[r], msum[r]);
            }
        __syncthreads();
    }
    for (int r = 0; r < kR; ++r) {
        const int64_t n = n0 + tn, m = m0 + tm + r * kRowStep;
        if (n < N && m < n_mrows) *reinterpret_cast<float*>(dst + row_offset(sd, m) + n * 4) = cudaq::finish<W>(sum[r], msum[r]);
    }
}

// Step 2, float weights: exact products summed in double (any order), rounded once. The
// blocks and warps of dot_q_kernel.
__global__ void __launch_bounds__(32 * kWarps) dot_f_kernel(DType wt, const uint8_t* w, int64_t w_nb1, int64_t N, const uint8_t* act,
                                                            int64_t act_row_bytes, int64_t n_mrows, int64_t K, uint8_t* dst, Shape sd) {
    const int64_t n = int64_t(blockIdx.x) * kWarps + threadIdx.y;
    if (n >= N) return;
    const uint8_t* wrow = w + n * w_nb1;
    const int64_t m0 = int64_t(blockIdx.y) * kMRows, m1 = m0 + kMRows < n_mrows ? m0 + kMRows : n_mrows;
    for (int64_t m = m0; m < m1; ++m) {
        const uint8_t* arow = act + m * act_row_bytes;
        double s = 0;
        for (int64_t e = threadIdx.x; e < K; e += 32) s += cudaq::prod_f(wt, wrow, arow, e);
        s = warp_sum(s);
        if (threadIdx.x == 0) *reinterpret_cast<float*>(dst + row_offset(sd, m) + n * 4) = float(s);
    }
}

// From this many activation rows on, the tiled kernel (below it, one warp per weight row).
constexpr int64_t kTiledMinRows = 32;

template <DType W> void launch_q(dim3 grid, cudaStream_t st, const Tensor& w, const uint8_t* act, int64_t arb,
                                 int64_t n_mrows, const Tensor& dst) {
    const int64_t nb = w.ne[0] / block_size(W);
    if (n_mrows >= kTiledMinRows) {
        const int64_t N = w.ne[1], gy = (n_mrows + kTM - 1) / kTM;
        if (gy > 65535) throw std::runtime_error("cuda mul_mat: " + std::to_string(n_mrows) + " activation rows exceed one launch");
        LS_LAUNCH(dot_q_tiled_kernel<W>, dim3(unsigned((N + kTN - 1) / kTN), unsigned(gy)), kTileThreads, st)(
            dptr(w), int64_t(w.nb[1]), N, act, arb, n_mrows, nb, dptr(dst), shape_of(dst));
        return;
    }
    LS_LAUNCH(dot_q_kernel<W>, grid, dim3(32, kWarps), st)(dptr(w), int64_t(w.nb[1]), w.ne[1], act, arb, n_mrows, nb, dptr(dst),
                                                         shape_of(dst));
}

}  // namespace

void mul_mat(const Tensor& dst, Ctx& ctx) {
    const Tensor& w = *dst.src[0];
    const Tensor& x = *dst.src[1];
    const int64_t K = w.ne[0], N = w.ne[1], n_mrows = x.ne[1] * x.ne[2] * x.ne[3];
    if (N == 0 || n_mrows == 0) return;
    const DType at = vec_dot_type(w.type);
    const int64_t arb = int64_t(row_bytes(at, K));
    // The activation rows quantized to `at`, unless the previous mul_mat of this graph
    // already left exactly these in the buffer (q/k/v and gate/up share their input).
    const bool same = ctx.act_rows.src == &x && ctx.act_rows.type == int(at);
    auto* act = static_cast<uint8_t*>(ctx.act_buffer(size_t(arb * n_mrows)));
    if (!same) {
        const int be = cudaq::quant_block_elems(at);
        LS_LAUNCH(quantize_act_kernel, unsigned(n_mrows), 128, ctx.stream)(at, be, dptr(x), shape_of(x), act, arb, K / be);
        LS_CUDA_CHECK_LAUNCH("quantize_act_kernel");
        ctx.act_rows.src = &x;
        ctx.act_rows.type = int(at);
    }

    const int64_t gy = (n_mrows + kMRows - 1) / kMRows;
    if (gy > 65535) throw std::runtime_error("cuda mul_mat: " + std::to_string(n_mrows) + " activation rows exceed one launch");
    const dim3 grid(blocks_for(N, kWarps), unsigned(gy));
    if (w.type == DType::F32 || w.type == DType::F16 || w.type == DType::BF16)
        LS_LAUNCH(dot_f_kernel, grid, dim3(32, kWarps), ctx.stream)(w.type, dptr(w), int64_t(w.nb[1]), N, act, arb, n_mrows, K, dptr(dst),
                                                                    shape_of(dst));
    else if (!with_quant_weight(w.type, [&](auto wt) { launch_q<decltype(wt)::value>(grid, ctx.stream, w, act, arb, n_mrows, dst); }))
        throw std::logic_error(std::string("cuda mul_mat: weight type ") + dtype_name(w.type) + " reached the kernel");
    LS_CUDA_CHECK_LAUNCH("mul_mat dot kernel");
}

}  // namespace ls::cuda
