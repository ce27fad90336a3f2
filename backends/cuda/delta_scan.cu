// delta_scan: a warp per state row i (Dv rows of Dk per value head), kDeltaWarps rows per
// block, the reference recurrence (core/ref/delta_scan.cpp) token by token. Rows are
// independent, so a warp owns its row in place in the slot's memory, lane l holding
// elements j = l, l + 32, ...: exactly canon_dot's partial sum l, so every dot product is
// the lane's sum in increasing j, then the warp's tree (block_reduce.cuh). The bits of the
// reference.
#include "backends/cuda/block_reduce.cuh"
#include "backends/cuda/elementwise.cuh"
#include "backends/cuda/support_predicates.h"
#include "core/ir/op_params.h"

namespace ls::cuda {
namespace {

constexpr int kDeltaWarps = 4;

// grid: (run * Hv + h, row group); block: 32 x kDeltaWarps.
__global__ void __launch_bounds__(32 * kDeltaWarps)
delta_scan_kernel(const uint8_t* qkv, int64_t qkv_nb1, const float* g, const float* beta, float* state, int64_t st_nb1,
                  const int32_t* runs, const int32_t* order, float* y, DeltaScanParams p) {
    const int64_t ri = blockIdx.x / p.n_v_heads, h = blockIdx.x % p.n_v_heads;
    const int64_t i = int64_t(blockIdx.y) * kDeltaWarps + threadIdx.y;
    if (i >= p.d_v) return;  // the whole warp
    const int lane = threadIdx.x;
    const int32_t slot = runs[4 * ri], first = runs[4 * ri + 1], n = runs[4 * ri + 2], reset = runs[4 * ri + 3];
    const int64_t Hk = p.n_k_heads, Dk = p.d_k, Hv = p.n_v_heads, Dv = p.d_v;
    const int64_t hk = p.head_map == HEADS_TILED ? h % Hk : h / (Hv / Hk);
    float* Si = reinterpret_cast<float*>(reinterpret_cast<uint8_t*>(state) + slot * st_nb1) + (h * Dv + i) * Dk;
    if (reset)
        for (int64_t j = lane; j < Dk; j += 32) Si[j] = 0.0f;
    for (int32_t t = 0; t < n; ++t) {
        const int64_t tok = order[first + t];
        const float* row = reinterpret_cast<const float*>(qkv + tok * qkv_nb1);
        const float* q = row + hk * Dk;
        const float* k = row + Hk * Dk + hk * Dk;
        const float rq = canon_div(1.0f, canon_sqrt(__fadd_rn(warp_canon_dot(q, q, Dk, lane), p.eps)));
        const float rk = canon_div(1.0f, canon_sqrt(__fadd_rn(warp_canon_dot(k, k, Dk, lane), p.eps)));
        const float decay = det_exp(g[tok * Hv + h]);
        const float b = beta[tok * Hv + h];
        // S_i = e^g S_i, then S_i . k (k normalized); the lane's own elements, in increasing j.
        const float kv = warp_canon_sum(Dk, lane, [&](int64_t j) {
            Si[j] = __fmul_rn(Si[j], decay);
            return __fmul_rn(Si[j], __fmul_rn(k[j], rk));
        });
        const float u = __fmul_rn(__fsub_rn(row[2 * Hk * Dk + h * Dv + i], kv), b);
        // S_i += u k, then o_i = S_i . q (q normalized and scaled).
        const float o = warp_canon_sum(Dk, lane, [&](int64_t j) {
            Si[j] = __fadd_rn(Si[j], __fmul_rn(u, __fmul_rn(k[j], rk)));
            return __fmul_rn(Si[j], __fmul_rn(__fmul_rn(q[j], rq), p.scale));
        });
        if (lane == 0) y[(tok * Hv + h) * Dv + i] = o;
    }
}

}  // namespace

void delta_scan(const Tensor& dst, Ctx& ctx) {
    const Tensor& qkv = *dst.src[0];
    const Tensor& state = *dst.src[3];
    const Tensor& runs = *dst.src[4];
    const Tensor& order = *dst.src[5];
    const auto p = dst.get_params<DeltaScanParams>();
    // The runs were checked by core before the graph ran (check_index_inputs).
    const unsigned blocks = unsigned(runs.ne[1] * p.n_v_heads), row_groups = blocks_for(p.d_v, kDeltaWarps);
    if (blocks == 0 || row_groups == 0) return;
    if (row_groups > 65535) throw std::invalid_argument("delta_scan: value heads wider than one launch covers");
    LS_LAUNCH(delta_scan_kernel, dim3(blocks, row_groups), dim3(32, kDeltaWarps), ctx.stream)(
        dptr(qkv), int64_t(qkv.nb[1]), reinterpret_cast<const float*>(dptr(*dst.src[1])),
        reinterpret_cast<const float*>(dptr(*dst.src[2])), reinterpret_cast<float*>(dptr(state)), int64_t(state.nb[1]),
        reinterpret_cast<const int32_t*>(dptr(runs)), reinterpret_cast<const int32_t*>(dptr(order)),
        reinterpret_cast<float*>(dptr(dst)), p);
    LS_CUDA_CHECK_LAUNCH("delta_scan_kernel");
}

bool supports_delta_scan(const Tensor& n) {
    const Tensor* a = n.src[0];
    const Tensor* b = n.src[1];
    return f32_elems(a) && a->is_contiguous() && f32_elems(b) && b->is_contiguous() && f32_elems(n.src[2]) &&
           n.src[2]->is_contiguous() && f32_elems(n.src[3]) && n.src[3]->is_contiguous() && host_i32(n.src[4]) && host_i32(n.src[5]) && f32_elems(&n) &&
           n.is_contiguous();
}

}  // namespace ls::cuda
