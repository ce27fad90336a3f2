#include "backends/cuda/block_reduce.cuh"
#include "backends/cuda/elementwise.cuh"
#include "backends/cuda/support_predicates.h"
#include "core/ir/op_params.h"

namespace ls::cuda {
namespace {

// One block per row, as ref::softmax: max of x*scale, e = det_exp(x*scale - max), the sum
// of the e in double (order free), y = float(double(e) / sum).
__global__ void softmax_kernel(const float* x, float* y, int64_t K, float scale) {
    __shared__ double sd[32];
    __shared__ float sf[32];
    const float* px = x + int64_t(blockIdx.x) * K;
    float* py = y + int64_t(blockIdx.x) * K;
    float mx = -INFINITY;
    for (int64_t i = threadIdx.x; i < K; i += blockDim.x) mx = fmaxf(mx, px[i] * scale);
    mx = block_max(mx, sf);
    double s = 0;
    for (int64_t i = threadIdx.x; i < K; i += blockDim.x) {
        const float e = det_exp(px[i] * scale - mx);
        py[i] = e;
        s += e;
    }
    s = block_sum(s, sd);
    for (int64_t i = threadIdx.x; i < K; i += blockDim.x) py[i] = float(double(py[i]) / s);
}

}  // namespace

void softmax(const Tensor& dst, Ctx& ctx) {
    const Tensor& x = *dst.src[0];
    if (x.nelements() == 0) return;
    LS_LAUNCH(softmax_kernel, unsigned(x.nrows()), kThreads, ctx.stream)(reinterpret_cast<const float*>(dptr(x)),
                                                                      reinterpret_cast<float*>(dptr(dst)), x.ne[0],
                                                                      dst.get_params<SoftmaxParams>().scale);
    LS_CUDA_CHECK_LAUNCH("softmax_kernel");
}

bool supports_softmax(const Tensor& n) {
    const Tensor* a = n.src[0];
    return f32_elems(a) && a->is_contiguous() && f32_elems(&n) && n.is_contiguous();
}

}  // namespace ls::cuda
