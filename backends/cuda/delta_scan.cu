// delta_scan: one block per (run, value head), one thread per state row i (Dv rows of Dk),
// the reference recurrence (core/ref/delta_scan.cpp) token by token. Rows are independent, so
// a thread owns its row in place in the slot's memory; dot products sum exact products in
// double in det_dot4's order: the same bits as the reference.
#include "backends/cuda/elementwise.cuh"
#include "backends/cuda/support_predicates.h"
#include "core/ir/op_params.h"
#include "core/rules/scan_runs.h"

namespace ls::cuda {
namespace {

__global__ void delta_scan_kernel(const uint8_t* qkv, int64_t qkv_nb1, const float* g, const float* beta, float* state,
                                  int64_t st_nb1, const int32_t* runs, const int32_t* order, float* y, DeltaScanParams p) {
    const int64_t ri = blockIdx.x / p.n_v_heads, h = blockIdx.x % p.n_v_heads, i = threadIdx.x;
    if (i >= p.d_v) return;
    const int32_t slot = runs[4 * ri], first = runs[4 * ri + 1], n = runs[4 * ri + 2], reset = runs[4 * ri + 3];
    const int64_t Hk = p.n_k_heads, Dk = p.d_k, Hv = p.n_v_heads, Dv = p.d_v;
    const int64_t hk = p.head_map == HEADS_TILED ? h % Hk : h / (Hv / Hk);
    float* Si = reinterpret_cast<float*>(reinterpret_cast<uint8_t*>(state) + slot * st_nb1) + (h * Dv + i) * Dk;
    if (reset)
        for (int64_t j = 0; j < Dk; ++j) Si[j] = 0.0f;
    for (int32_t t = 0; t < n; ++t) {
        const int64_t tok = order[first + t];
        const float* row = reinterpret_cast<const float*>(qkv + tok * qkv_nb1);
        const float* q = row + hk * Dk;
        const float* k = row + Hk * Dk + hk * Dk;
        const float rq = __fdiv_rn(1.0f, __fsqrt_rn(__fadd_rn(det_dot4(q, q, Dk), p.eps)));
        const float rk = __fdiv_rn(1.0f, __fsqrt_rn(__fadd_rn(det_dot4(k, k, Dk), p.eps)));
        const float decay = det_exp(g[tok * Hv + h]);
        const float b = beta[tok * Hv + h];
        double sk[4] = {0, 0, 0, 0};  // det_dot4's order: partial sums by j mod 4
        for (int64_t j = 0; j < Dk; ++j) {
            Si[j] = __fmul_rn(Si[j], decay);
            sk[j % 4] += double(Si[j]) * double(__fmul_rn(k[j], rk));
        }
        const float kv = float((sk[0] + sk[1]) + (sk[2] + sk[3]));
        const float u = __fmul_rn(__fsub_rn(row[2 * Hk * Dk + h * Dv + i], kv), b);
        double sq[4] = {0, 0, 0, 0};
        for (int64_t j = 0; j < Dk; ++j) {
            Si[j] = __fadd_rn(Si[j], __fmul_rn(u, __fmul_rn(k[j], rk)));
            sq[j % 4] += double(Si[j]) * double(__fmul_rn(__fmul_rn(q[j], rq), p.scale));
        }
        y[(tok * Hv + h) * Dv + i] = float((sq[0] + sq[1]) + (sq[2] + sq[3]));
    }
}

}  // namespace

void delta_scan(const Tensor& dst, Ctx& ctx) {
    const Tensor& qkv = *dst.src[0];
    const Tensor& state = *dst.src[3];
    const Tensor& runs = *dst.src[4];
    const Tensor& order = *dst.src[5];
    const auto p = dst.get_params<DeltaScanParams>();
    const std::vector<uint8_t> rb = ctx.host_bytes(runs), ob = ctx.host_bytes(order);
    read_scan_runs(reinterpret_cast<const int32_t*>(rb.data()), runs.ne[1], reinterpret_cast<const int32_t*>(ob.data()),
                   qkv.nrows(), state.ne[1], "delta_scan");
    if (p.d_v > 1024) throw std::invalid_argument("delta_scan: the CUDA kernel handles value heads up to 1024 wide");
    const unsigned blocks = unsigned(runs.ne[1] * p.n_v_heads), threads = unsigned((p.d_v + 31) / 32 * 32);
    if (blocks == 0) return;
    LS_LAUNCH(delta_scan_kernel, blocks, threads, ctx.stream)(
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
           n.src[2]->is_contiguous() && f32_elems(n.src[3]) && n.src[3]->is_contiguous() && f32_elems(&n) &&
           n.is_contiguous();
}

}  // namespace ls::cuda
