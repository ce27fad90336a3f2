#include "backends/cuda/block_reduce.cuh"
#include "backends/cuda/elementwise.cuh"
#include "backends/cuda/support_predicates.h"
#include "core/ir/op_params.h"

namespace ls::cuda {
namespace {

// One block per row, as ref::rms_norm: the sum of squares in double (exact products, order
// free), r = 1 / sqrt(float(ss / K) + eps) with IEEE sqrt and division, y = x * r * w.
__global__ void rms_norm_kernel(const uint8_t* x, Shape sx, const float* w, uint8_t* y, Shape sy, float eps) {
    __shared__ double sd[32];
    const int64_t r = blockIdx.x, K = sx.ne[0];
    const int64_t i1 = r % sx.ne[1], i2 = (r / sx.ne[1]) % sx.ne[2], i3 = r / (sx.ne[1] * sx.ne[2]);
    const float* px = reinterpret_cast<const float*>(x + i1 * sx.nb[1] + i2 * sx.nb[2] + i3 * sx.nb[3]);
    float* py = reinterpret_cast<float*>(y + i1 * sy.nb[1] + i2 * sy.nb[2] + i3 * sy.nb[3]);
    double ss = 0;
    for (int64_t i = threadIdx.x; i < K; i += blockDim.x) ss += double(px[i]) * double(px[i]);
    ss = block_sum(ss, sd);
    const float rs = __fdiv_rn(1.0f, __fsqrt_rn(__fadd_rn(float(ss / double(K)), eps)));
    for (int64_t i = threadIdx.x; i < K; i += blockDim.x) py[i] = __fmul_rn(__fmul_rn(px[i], rs), w ? w[i] : 1.0f);
}

}  // namespace

void rms_norm(const Tensor& dst, Ctx& ctx) {
    const Tensor& x = *dst.src[0];
    if (x.nelements() == 0) return;
    const float* w = dst.src[1] ? reinterpret_cast<const float*>(dptr(*dst.src[1])) : nullptr;
    LS_LAUNCH(rms_norm_kernel, unsigned(x.nrows()), kThreads, ctx.stream)(dptr(x), shape_of(x), w, dptr(dst), shape_of(dst),
                                                                       dst.get_params<RmsNormParams>().eps);
    LS_CUDA_CHECK_LAUNCH("rms_norm_kernel");
}

bool supports_rms_norm(const Tensor& n) {
    const Tensor* a = n.src[0];
    const Tensor* b = n.src[1];
    return f32_elems(a) && (!b || (f32_elems(b) && b->is_contiguous())) && f32_elems(&n);
}

}  // namespace ls::cuda
