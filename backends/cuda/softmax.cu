#include "backends/cuda/block_reduce.cuh"
#include "backends/cuda/elementwise.cuh"
#include "backends/cuda/support_predicates.h"
#include "core/ir/op_params.h"

namespace ls::cuda {
namespace {

// A warp per row (kRowWarps rows per block), as ref::softmax_row: max of x*scale (exact),
// e = det_exp(x*scale - max), sum = canon_sum of the e by the warp, y = e / sum (IEEE).
constexpr int kRowWarps = 4;

__global__ void __launch_bounds__(32 * kRowWarps) softmax_kernel(const float* x, float* y, int64_t K, float scale, int64_t n_rows) {
    const int64_t r = int64_t(blockIdx.x) * kRowWarps + threadIdx.y;
    if (r >= n_rows) return;  // the whole warp
    const int lane = threadIdx.x;
    const float* px = x + r * K;
    float* py = y + r * K;
    float mx = -INFINITY;
    for (int64_t i = lane; i < K; i += 32) mx = fmaxf(mx, __fmul_rn(px[i], scale));
    mx = warp_max(mx);
    // Each lane writes and then sums its own elements: partial sum `lane` of canon_sum.
    const float sum = warp_canon_sum(K, lane, [&](int64_t i) { return py[i] = det_exp(__fsub_rn(__fmul_rn(px[i], scale), mx)); });
    for (int64_t i = lane; i < K; i += 32) py[i] = canon_div(py[i], sum);
}

}  // namespace

void softmax(const Tensor& dst, Ctx& ctx) {
    const Tensor& x = *dst.src[0];
    if (x.nelements() == 0) return;
    const int64_t n_rows = x.nrows();
    LS_LAUNCH(softmax_kernel, blocks_for(n_rows, kRowWarps), dim3(32, kRowWarps), ctx.stream)(
        reinterpret_cast<const float*>(dptr(x)), reinterpret_cast<float*>(dptr(dst)), x.ne[0],
        dst.get_params<SoftmaxParams>().scale, n_rows);
    LS_CUDA_CHECK_LAUNCH("softmax_kernel");
}

bool supports_softmax(const Tensor& n) {
    const Tensor* a = n.src[0];
    return f32_elems(a) && a->is_contiguous() && f32_elems(&n) && n.is_contiguous();
}

}  // namespace ls::cuda
