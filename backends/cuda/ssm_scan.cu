// ssm_scan: a warp per state row (head h, channel p: N floats in the slot's memory, updated in
// place), kSsmWarps rows per block, the reference recurrence (core/ref/ssm_scan.cpp) token by
// token. Lane l holds elements n = l, l + 32, ...: canon_dot's partial sum l, so the output is
// the lane's sum in increasing n, then the warp's tree (block_reduce.cuh). The bits of the
// reference.
#include "backends/cuda/block_reduce.cuh"
#include "backends/cuda/elementwise.cuh"
#include "backends/cuda/support_predicates.h"
#include "core/ir/op_params.h"

namespace ls::cuda {
namespace {

constexpr int kSsmWarps = 4;

// grid: (run * H + h, channel group); block: 32 x kSsmWarps.
__global__ void __launch_bounds__(32 * kSsmWarps)
ssm_scan_kernel(const uint8_t* xbc, int64_t xbc_nb1, const float* dt, const float* A, float* state, int64_t st_nb1,
                const int32_t* runs, const int32_t* order, float* y, SsmScanParams p) {
    const int64_t ri = blockIdx.x / p.n_head, h = blockIdx.x % p.n_head;
    const int64_t c = int64_t(blockIdx.y) * kSsmWarps + threadIdx.y;
    if (c >= p.head_dim) return;  // the whole warp
    const int lane = threadIdx.x;
    const int32_t slot = runs[4 * ri], first = runs[4 * ri + 1], n = runs[4 * ri + 2], reset = runs[4 * ri + 3];
    const int64_t H = p.n_head, P = p.head_dim, N = p.d_state, G = p.n_group, grp = h / (H / G);
    float* Sp = reinterpret_cast<float*>(reinterpret_cast<uint8_t*>(state) + slot * st_nb1) + (h * P + c) * N;
    if (reset)
        for (int64_t j = lane; j < N; j += 32) Sp[j] = 0.0f;
    const float Ah = A[h];
    for (int32_t t = 0; t < n; ++t) {
        const int64_t tok = order[first + t];
        const float* row = reinterpret_cast<const float*>(xbc + tok * xbc_nb1);
        const float* B = row + H * P + grp * N;
        const float* C = row + H * P + G * N + grp * N;
        const float d = dt[tok * H + h];
        const float a = det_exp(__fmul_rn(d, Ah));
        const float u = __fmul_rn(d, row[h * P + c]);
        const float o = warp_canon_sum(N, lane, [&](int64_t j) {
            Sp[j] = __fadd_rn(__fmul_rn(Sp[j], a), __fmul_rn(u, B[j]));
            return __fmul_rn(Sp[j], C[j]);
        });
        if (lane == 0) y[(tok * H + h) * P + c] = o;
    }
}

}  // namespace

void ssm_scan(const Tensor& dst, Ctx& ctx) {
    const Tensor& xbc = *dst.src[0];
    const Tensor& state = *dst.src[3];
    const Tensor& runs = *dst.src[4];
    const Tensor& order = *dst.src[5];
    const auto p = dst.get_params<SsmScanParams>();
    // The runs were checked by core before the graph ran (check_index_inputs).
    const unsigned blocks = unsigned(runs.ne[1] * p.n_head), groups = blocks_for(p.head_dim, kSsmWarps);
    if (blocks == 0 || groups == 0) return;
    if (groups > 65535) throw std::invalid_argument("ssm_scan: heads wider than one launch covers");
    LS_LAUNCH(ssm_scan_kernel, dim3(blocks, groups), dim3(32, kSsmWarps), ctx.stream)(
        dptr(xbc), int64_t(xbc.nb[1]), reinterpret_cast<const float*>(dptr(*dst.src[1])), reinterpret_cast<const float*>(dptr(*dst.src[2])),
        reinterpret_cast<float*>(dptr(state)), int64_t(state.nb[1]), reinterpret_cast<const int32_t*>(dptr(runs)),
        reinterpret_cast<const int32_t*>(dptr(order)), reinterpret_cast<float*>(dptr(dst)), p);
    LS_CUDA_CHECK_LAUNCH("ssm_scan_kernel");
}

bool supports_ssm_scan(const Tensor& n) {
    for (int i = 0; i < 4; ++i)
        if (!f32_elems(n.src[i]) || !n.src[i]->is_contiguous()) return false;
    return host_i32(n.src[4]) && host_i32(n.src[5]) && f32_elems(&n) && n.is_contiguous();
}

}  // namespace ls::cuda
