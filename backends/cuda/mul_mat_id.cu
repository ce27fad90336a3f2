// mul_mat_id (core/ref/mul_mat_id.cpp): mul_mat's arithmetic with the weight matrix chosen
// per (token, selected expert) by an id read on the device. The ids are not read on the host
// (they are usually computed by the topk node just before): an id outside [0, E) yields NaN
// outputs.
//   Few pairs (decode): one warp per (weight row n, pair p = t * k + j), computing
//   warp_row_dot as mul_mat's dot_q_kernel does.
//   kTiledMinRows pairs or more (prompts), quantized weights: group_pairs_kernel sorts the
//   pairs by expert on the device and cuts each expert's list into tiles of up to kMmaM
//   pairs; then mul_mat's tiles (tensor cores, or dp4a before sm_80) run over one expert's
//   weight rows and the activation rows routed to it, so a weight row is read once per tile
//   instead of once per pair. The grid is sized for the most tiles there can be; blocks past
//   the actual count return at once. Which block computes an output never changes its value
//   (each output is one chain), so the order within a group does not matter.
#include <stdexcept>
#include <string>

#include "backends/cuda/act_rows.cuh"
#include "backends/cuda/elementwise.cuh"
#include "backends/cuda/mul_mat.cuh"
#include "backends/cuda/quant_device.cuh"
#include "backends/cuda/support_predicates.h"
#include "core/quant/quant.h"

namespace ls::cuda {
namespace {

constexpr int kIdWarps = 4;

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
    const int64_t p = int64_t(blockIdx.y) * kIdWarps + threadIdx.y;
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
    const int64_t p = int64_t(blockIdx.y) * kIdWarps + threadIdx.y;
    if (p >= g.n_pairs) return;
    const uint8_t* wbase;
    int64_t ar;
    if (!pair_rows(g, ids, p, wbase, ar, w)) {
        if (threadIdx.x == 0) dst[p * N + n] = NAN;
        return;
    }
    const uint8_t *wrow = wbase + n * g.w_nb1, *arow = act + ar * g.act_row_bytes;
    const float s = warp_canon_sum(K, int(threadIdx.x), [&](int64_t e) { return cudaq::prod_f(wt, wrow, arow, e); });
    if (threadIdx.x == 0) dst[p * N + n] = s;
}

// The pairs of one expert in tiles (written by group_pairs_kernel, in ctx.temp):
// order[tile_first[y] .. + tile_count[y]) are tile y's pairs, all routed to tile_expert[y].
struct PairTiles {
    int32_t *order, *tile_expert, *tile_first, *tile_count, *n_tiles, *counts, *fill;
};
// Both tile kinds take kMmaM activation rows, the size group_pairs_kernel cuts the lists by.
static_assert(kDpM == kMmaM, "the dp4a and tensor-core tiles take the same number of pairs");
inline int64_t max_tiles(int64_t n_pairs, int64_t n_experts) {
    return (n_pairs + kMmaM - 1) / kMmaM + (n_experts < n_pairs ? n_experts : n_pairs);
}

// One block: counts per expert, tiles in expert order (one thread: E is at most a few
// hundred), then each pair's place in its expert's list. Pairs with an id out of range get
// their NaN outputs here and join no tile.
__global__ void group_pairs_kernel(const int32_t* ids, IdGeom g, PairTiles pt, float* dst, int64_t N) {
    const int tid = threadIdx.x, nt = blockDim.x;
    for (int64_t e = tid; e < g.n_experts; e += nt) pt.counts[e] = 0;
    __syncthreads();
    for (int64_t p = tid; p < g.n_pairs; p += nt) {
        const int32_t e = ids[p];
        if (e >= 0 && e < g.n_experts) atomicAdd(&pt.counts[e], 1);
        else
            for (int64_t n = 0; n < N; ++n) dst[p * N + n] = NAN;
    }
    __syncthreads();
    if (tid == 0) {
        int32_t start = 0, y = 0;
        for (int64_t e = 0; e < g.n_experts; ++e) {
            pt.fill[e] = start;
            for (int32_t c = 0; c < pt.counts[e]; c += kMmaM) {
                pt.tile_expert[y] = int32_t(e);
                pt.tile_first[y] = start + c;
                pt.tile_count[y] = pt.counts[e] - c < kMmaM ? pt.counts[e] - c : kMmaM;
                ++y;
            }
            start += pt.counts[e];
        }
        *pt.n_tiles = y;
    }
    __syncthreads();
    for (int64_t p = tid; p < g.n_pairs; p += nt) {
        const int32_t e = ids[p];
        if (e >= 0 && e < g.n_experts) pt.order[atomicAdd(&pt.fill[e], 1)] = int32_t(p);
    }
}

// Tile y of the grouped pairs as mul_mat's tiles see it (mul_mat.cuh): weight rows n0 + r of
// expert e's matrix, the activation rows of the tile's pairs, outputs dst[p * N + n].
struct IdMap {
    const uint8_t* wm;  // the tile's expert's matrix
    const uint8_t* act;
    const int32_t* pairs;  // the tile's pairs
    int count;
    int64_t n0, N;
    IdGeom g;
    float* dst;
    __device__ const uint8_t* w_row(int r) const { return n0 + r < N ? wm + (n0 + r) * g.w_nb1 : nullptr; }
    __device__ const uint8_t* a_row(int m) const {
        if (m >= count) return nullptr;
        const int64_t p = pairs[m], t = p / g.k, j = p % g.k;
        return act + (t * g.X + (g.X == 1 ? 0 : j)) * g.act_row_bytes;
    }
    __device__ float* out(int r, int m) const { return dst + int64_t(pairs[m]) * N + n0 + r; }
};

template <bool kMma> __device__ inline IdMap id_map(const uint8_t* w, const uint8_t* act, const IdGeom& g, const PairTiles& pt,
                                                         float* dst, int64_t N) {
    const int y = int(blockIdx.y);
    return IdMap{w + int64_t(pt.tile_expert[y]) * g.w_nb2, act, pt.order + pt.tile_first[y], pt.tile_count[y],
                 int64_t(blockIdx.x) * (kMma ? kMmaN : kDpN), N, g, dst};
}
template <DType W>
__global__ void __launch_bounds__(32 * kMmaWarps) dot_q_id_mma_kernel(const uint8_t* w, const uint8_t* act, IdGeom g, PairTiles pt,
                                                                      int64_t nb, float* dst, int64_t N) {
    if (int(blockIdx.y) >= *pt.n_tiles) return;  // the whole block: a tile that did not occur
    mma_tile<W>(id_map<true>(w, act, g, pt, dst, N), nb);
}
template <DType W>
__global__ void __launch_bounds__(kDpThreads) dot_q_id_tiled_kernel(const uint8_t* w, const uint8_t* act, IdGeom g, PairTiles pt,
                                                                    int64_t nb, float* dst, int64_t N) {
    if (int(blockIdx.y) >= *pt.n_tiles) return;
    dp4a_tile<W>(id_map<false>(w, act, g, pt, dst, N), nb);
}

template <DType W> void launch_q(dim3 grid, dim3 block, cudaStream_t st, const Tensor& w, const int32_t* ids, const uint8_t* act,
                                 const IdGeom& g, float* dst) {
    LS_LAUNCH(dot_q_id_kernel<W>, grid, block, st)(dptr(w), ids, act, g, w.ne[0] / block_size(W), dst, w.ne[1]);
}

template <DType W> void launch_grouped(const Ctx& ctx, const Tensor& w, const uint8_t* act, const IdGeom& g, const PairTiles& pt,
                                       int64_t n_tiles_max, float* dst) {
    const int64_t N = w.ne[1], nb = w.ne[0] / block_size(W);
    if (ctx.int8_mma)
        LS_LAUNCH(dot_q_id_mma_kernel<W>, dim3(unsigned((N + kMmaN - 1) / kMmaN), unsigned(n_tiles_max)), 32 * kMmaWarps, ctx.stream)(
            dptr(w), act, g, pt, nb, dst, N);
    else
        LS_LAUNCH(dot_q_id_tiled_kernel<W>, dim3(unsigned((N + kDpN - 1) / kDpN), unsigned(n_tiles_max)), kDpThreads, ctx.stream)(
            dptr(w), act, g, pt, nb, dst, N);
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
    launch_quantize_act(at, dptr(x), shape_of(x), act, arb, K, n_arows, ctx.stream);
    LS_CUDA_CHECK_LAUNCH("quantize_act_kernel");
    const IdGeom g{int64_t(w.nb[1]), int64_t(w.nb[2]), w.ne[2], k, X, k * T, arb};
    const auto* id = reinterpret_cast<const int32_t*>(dptr(ids));
    float* out = reinterpret_cast<float*>(dptr(dst));
    const bool quant = w.type != DType::F32 && w.type != DType::F16 && w.type != DType::BF16;
    if (quant && g.n_pairs >= kTiledMinRows) {
        const int64_t tiles = max_tiles(g.n_pairs, g.n_experts);
        if (tiles > 65535 || g.n_pairs > 2147483647 || N > 2147483647)
            throw std::runtime_error("cuda mul_mat_id: " + std::to_string(g.n_pairs) + " pairs exceed one launch");
        auto* ints = static_cast<int32_t*>(ctx.temp(size_t(g.n_pairs + 3 * tiles + 1 + 2 * g.n_experts) * sizeof(int32_t)));
        PairTiles pt;
        pt.order = ints;
        pt.tile_expert = pt.order + g.n_pairs;
        pt.tile_first = pt.tile_expert + tiles;
        pt.tile_count = pt.tile_first + tiles;
        pt.n_tiles = pt.tile_count + tiles;
        pt.counts = pt.n_tiles + 1;
        pt.fill = pt.counts + g.n_experts;
        LS_LAUNCH(group_pairs_kernel, 1, 256, ctx.stream)(id, g, pt, out, N);
        LS_CUDA_CHECK_LAUNCH("group_pairs_kernel");
        if (!cudaq::with_quant_weight(w.type, [&](auto wt) { launch_grouped<decltype(wt)::value>(ctx, w, act, g, pt, tiles, out); }))
            throw std::logic_error(std::string("cuda mul_mat_id: weight type ") + dtype_name(w.type) + " reached the kernel");
        LS_CUDA_CHECK_LAUNCH("mul_mat_id tiled kernel");
        return;
    }
    const int64_t gy = (g.n_pairs + kIdWarps - 1) / kIdWarps;
    if (gy > 65535 || N > 2147483647) throw std::runtime_error("cuda mul_mat_id: " + std::to_string(g.n_pairs) + " pairs exceed one launch");
    const int warps = int(g.n_pairs < kIdWarps ? g.n_pairs : kIdWarps);
    const dim3 grid{unsigned(N), unsigned(gy)}, block{32u, unsigned(warps)};
    if (w.type == DType::F32 || w.type == DType::F16 || w.type == DType::BF16)
        LS_LAUNCH(dot_f_id_kernel, grid, block, ctx.stream)(w.type, dptr(w), id, act, g, K, out, N);
    else if (!cudaq::with_quant_weight(w.type, [&](auto wt) { launch_q<decltype(wt)::value>(grid, block, ctx.stream, w, id, act, g, out); }))
        throw std::logic_error(std::string("cuda mul_mat_id: weight type ") + dtype_name(w.type) + " reached the kernel");
    LS_CUDA_CHECK_LAUNCH("mul_mat_id dot kernel");
}

bool supports_mul_mat_id(const Tensor& n) {
    const Tensor* a = n.src[0];
    const Tensor* b = n.src[1];
    return a && cudaq::mul_mat_supported(a->type) && f32_elems(b) && n.src[2] && n.src[2]->type == DType::I32 &&
           n.src[2]->is_contiguous() && f32_elems(&n) && n.is_contiguous();
}

}  // namespace ls::cuda
