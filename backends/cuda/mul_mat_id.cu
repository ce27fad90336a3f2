// mul_mat_id (core/ref/mul_mat_id.cpp): mul_mat's arithmetic with the weight matrix chosen
// per (token, selected expert) by an id read on the device. One warp per (weight row n,
// pair p = t * k + j), computing warp_row_dot as mul_mat's dot_q_kernel does. The ids are
// not read on the host (they are usually computed by the topk node just before): an id
// outside [0, E) yields NaN outputs.
#include <stdexcept>
#include <string>

#include "backends/cuda/act_rows.cuh"
#include "backends/cuda/kernels.cuh"
#include "backends/cuda/qdev.h"
#include "backends/cuda/warp_dot.cuh"
#include "core/quant.h"

namespace ls::cuda {
namespace {

constexpr int kWarps = 4;

struct IdGeom {
    int64_t w_nb1, w_nb2, n_experts, k, X, n_pairs, act_row_bytes;
};

__device__ inline bool pair_rows(const IdGeom& g, const int32_t* ids, int64_t p, const uint8_t*& wbase, int64_t& arow, const uint8_t* w) {
    const int64_t t = p / g.k, j = p % g.k;
    const int32_t e = ids[p];
    arow = t * g.X + (g.X == 1 ? 0 : j);
    wbase = w + int64_t(e) * g.w_nb2;
    return e >= 0 && e < g.n_experts;
}

template <DType W>
__global__ void dot_q_id_kernel(const uint8_t* w, const int32_t* ids, const uint8_t* act, IdGeom g, int64_t nb, float* dst, int64_t N) {
    using D = cudaq::WDot<W>;
    const int64_t n = blockIdx.x;
    const int64_t p = int64_t(blockIdx.y) * kWarps + threadIdx.y;
    if (p >= g.n_pairs) return;  // the whole warp
    const int lane = threadIdx.x;
    const uint8_t* wbase;
    int64_t ar;
    if (!pair_rows(g, ids, p, wbase, ar, w)) {
        if (lane == 0) dst[p * N + n] = NAN;
        return;
    }
    const auto* x = reinterpret_cast<const typename D::WB*>(wbase + n * g.w_nb1);
    const auto* y = reinterpret_cast<const typename D::AB*>(act + ar * g.act_row_bytes);
    const float r = warp_row_dot<W>(x, y, nb, lane);
    if (lane == 0) dst[p * N + n] = r;
}

__global__ void dot_f_id_kernel(DType wt, const uint8_t* w, const int32_t* ids, const uint8_t* act, IdGeom g, int64_t K, float* dst,
                                int64_t N) {
    const int64_t n = blockIdx.x;
    const int64_t p = int64_t(blockIdx.y) * kWarps + threadIdx.y;
    if (p >= g.n_pairs) return;
    const uint8_t* wbase;
    int64_t ar;
    if (!pair_rows(g, ids, p, wbase, ar, w)) {
        if (threadIdx.x == 0) dst[p * N + n] = NAN;
        return;
    }
    double s = 0;
    for (int64_t e = threadIdx.x; e < K; e += 32) s += cudaq::prod_f(wt, wbase + n * g.w_nb1, act + ar * g.act_row_bytes, e);
    s = warp_sum(s);
    if (threadIdx.x == 0) dst[p * N + n] = float(s);
}

template <DType W> void launch_q(dim3 grid, dim3 block, cudaStream_t st, const Tensor& w, const int32_t* ids, const uint8_t* act,
                                 const IdGeom& g, float* dst) {
    LS_LAUNCH(dot_q_id_kernel<W>, grid, block, st)(dptr(w), ids, act, g, w.ne[0] / block_size(W), dst, w.ne[1]);
}

}  // namespace

void mul_mat_id(const Tensor& dst, Ctx& ctx) {
    const Tensor& w = *dst.src[0];
    const Tensor& x = *dst.src[1];
    const Tensor& ids = *dst.src[2];
    const int64_t K = w.ne[0], N = w.ne[1], k = ids.ne[0], T = ids.ne[1], X = x.ne[1];
    if (N == 0 || k * T == 0) return;
    const DType at = vec_dot_type(w.type);
    const int64_t arb = int64_t(row_bytes(at, K)), n_arows = X * T;
    auto* act = static_cast<uint8_t*>(ctx.act_buffer(size_t(arb * n_arows)));
    ctx.act_rows.src = nullptr;  // the buffer now holds this node's rows, not a mul_mat's
    const int be = cudaq::quant_block_elems(at);
    LS_LAUNCH(quantize_act_kernel, unsigned(n_arows), 128, ctx.stream)(at, be, dptr(x), shape_of(x), act, arb, K / be);
    LS_CUDA_CHECK_LAUNCH("quantize_act_kernel");
    const IdGeom g{int64_t(w.nb[1]), int64_t(w.nb[2]), w.ne[2], k, X, k * T, arb};
    const int64_t gy = (g.n_pairs + kWarps - 1) / kWarps;
    if (gy > 65535 || N > 2147483647) throw std::runtime_error("cuda mul_mat_id: " + std::to_string(g.n_pairs) + " pairs exceed one launch");
    const int warps = int(g.n_pairs < kWarps ? g.n_pairs : kWarps);
    const dim3 grid{unsigned(N), unsigned(gy)}, block{32u, unsigned(warps)};
    const auto* id = reinterpret_cast<const int32_t*>(dptr(ids));
    float* out = reinterpret_cast<float*>(dptr(dst));
    if (w.type == DType::F32 || w.type == DType::F16 || w.type == DType::BF16)
        LS_LAUNCH(dot_f_id_kernel, grid, block, ctx.stream)(w.type, dptr(w), id, act, g, K, out, N);
    else if (!cudaq::with_quant_weight(w.type, [&](auto wt) { launch_q<decltype(wt)::value>(grid, block, ctx.stream, w, id, act, g, out); }))
        throw std::logic_error(std::string("cuda mul_mat_id: weight type ") + dtype_name(w.type) + " reached the kernel");
    LS_CUDA_CHECK_LAUNCH("mul_mat_id dot kernel");
}

}  // namespace ls::cuda
