#include "backends/cuda/block_reduce.cuh"
#include "backends/cuda/elementwise.cuh"
#include "backends/cuda/support_predicates.h"
#include "core/ir/op_params.h"

namespace ls::cuda {
namespace {

// A warp per row (kRowWarps rows per block), as ref::rms_norm: ss = canon_dot(x, x) by the
// warp (block_reduce.cuh), r = 1 / sqrt(ss / K + eps) with IEEE division and square root,
// y = x * r * w.
constexpr int kRowWarps = 4;

__global__ void __launch_bounds__(32 * kRowWarps)
rms_norm_kernel(const uint8_t* x, Shape sx, const float* w, uint8_t* y, Shape sy, float eps, int64_t n_rows) {
    const int64_t r = int64_t(blockIdx.x) * kRowWarps + threadIdx.y, K = sx.ne[0];
    if (r >= n_rows) return;  // the whole warp
    const int lane = threadIdx.x;
    const int64_t i1 = r % sx.ne[1], i2 = (r / sx.ne[1]) % sx.ne[2], i3 = r / (sx.ne[1] * sx.ne[2]);
    const float* px = reinterpret_cast<const float*>(x + i1 * sx.nb[1] + i2 * sx.nb[2] + i3 * sx.nb[3]);
    float* py = reinterpret_cast<float*>(y + i1 * sy.nb[1] + i2 * sy.nb[2] + i3 * sy.nb[3]);
    const float ss = warp_canon_dot(px, px, K, lane);
    const float rs = canon_div(1.0f, canon_sqrt(__fadd_rn(canon_div(ss, float(K)), eps)));
    for (int64_t i = lane; i < K; i += 32) py[i] = __fmul_rn(__fmul_rn(px[i], rs), w ? w[i] : 1.0f);
}

// Wide rows (a model's hidden state: 640 to 8192): a block per row. Its 256 threads first
// copy the row into shared memory, many loads in flight at once; then one warp takes the
// canonical sum from there (the same sequence as above) and all threads write. With a warp
// alone, each lane's loads of a 4096-wide row followed one another: 52 us on an H200.
constexpr int kStageMin = 512, kStageMax = 8192, kStageThreads = 256;

__global__ void __launch_bounds__(kStageThreads)
rms_norm_staged_kernel(const uint8_t* x, Shape sx, const float* w, uint8_t* y, Shape sy, float eps) {
    __shared__ float xs[kStageMax];
    __shared__ float rs_shared;
    const int64_t r = blockIdx.x, K = sx.ne[0];
    const int64_t i1 = r % sx.ne[1], i2 = (r / sx.ne[1]) % sx.ne[2], i3 = r / (sx.ne[1] * sx.ne[2]);
    const float* px = reinterpret_cast<const float*>(x + i1 * sx.nb[1] + i2 * sx.nb[2] + i3 * sx.nb[3]);
    float* py = reinterpret_cast<float*>(y + i1 * sy.nb[1] + i2 * sy.nb[2] + i3 * sy.nb[3]);
    for (int64_t i = threadIdx.x; i < K; i += kStageThreads) xs[i] = px[i];
    __syncthreads();
    if (threadIdx.x < 32) {
        const float ss = warp_canon_dot(xs, xs, K, int(threadIdx.x));
        if (threadIdx.x == 0) rs_shared = canon_div(1.0f, canon_sqrt(__fadd_rn(canon_div(ss, float(K)), eps)));
    }
    __syncthreads();
    const float rs = rs_shared;
    for (int64_t i = threadIdx.x; i < K; i += kStageThreads) py[i] = __fmul_rn(__fmul_rn(xs[i], rs), w ? w[i] : 1.0f);
}

}  // namespace

void rms_norm(const Tensor& dst, Ctx& ctx) {
    const Tensor& x = *dst.src[0];
    if (x.nelements() == 0) return;
    const float* w = dst.src[1] ? reinterpret_cast<const float*>(dptr(*dst.src[1])) : nullptr;
    const int64_t n_rows = x.nrows(), K = x.ne[0];
    const float eps = dst.get_params<RmsNormParams>().eps;
    if (K >= kStageMin && K <= kStageMax && n_rows <= 0x7fffffff) {
        LS_LAUNCH(rms_norm_staged_kernel, unsigned(n_rows), kStageThreads, ctx.stream)(dptr(x), shape_of(x), w, dptr(dst), shape_of(dst), eps);
        LS_CUDA_CHECK_LAUNCH("rms_norm_staged_kernel");
        return;
    }
    LS_LAUNCH(rms_norm_kernel, blocks_for(n_rows, kRowWarps), dim3(32, kRowWarps), ctx.stream)(
        dptr(x), shape_of(x), w, dptr(dst), shape_of(dst), eps, n_rows);
    LS_CUDA_CHECK_LAUNCH("rms_norm_kernel");
}

bool supports_rms_norm(const Tensor& n) {
    const Tensor* a = n.src[0];
    const Tensor* b = n.src[1];
    return f32_elems(a) && (!b || (f32_elems(b) && b->is_contiguous())) && f32_elems(&n);
}

}  // namespace ls::cuda
