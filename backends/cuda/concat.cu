#include "backends/cuda/elementwise.cuh"
#include "backends/cuda/support_predicates.h"

namespace ls::cuda {
namespace {

// core/ref/concat.cpp: one thread per element of dst [A + B, n1, n2] (contiguous); a and b
// are read through their strides. B = 0: a contiguous copy of a.
__global__ void concat_kernel(const uint8_t* a, Shape sa, const uint8_t* b, Shape sb, float* d, int64_t A, int64_t B, int64_t n1,
                              int64_t n) {
    const int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
    if (i >= n) return;
    const int64_t W = A + B, e = i % W, r = i / W, i1 = r % n1, i2 = r / n1;
    d[i] = e < A ? reinterpret_cast<const float*>(a + i1 * sa.nb[1] + i2 * sa.nb[2])[e]
                 : reinterpret_cast<const float*>(b + i1 * sb.nb[1] + i2 * sb.nb[2])[e - A];
}

}  // namespace

void concat(const Tensor& dst, Ctx& ctx) {
    const Tensor& a = *dst.src[0];
    const Tensor* b = dst.src[1];
    const int64_t n = dst.nelements();
    if (n == 0) return;
    LS_LAUNCH(concat_kernel, blocks_for(n, kThreads), kThreads, ctx.stream)(dptr(a), shape_of(a), b ? dptr(*b) : dptr(a),
                                                                          shape_of(b ? *b : a), reinterpret_cast<float*>(dptr(dst)),
                                                                          a.ne[0], b ? b->ne[0] : 0, dst.ne[1], n);
    LS_CUDA_CHECK_LAUNCH("concat_kernel");
}

bool supports_concat(const Tensor& n) {
    const Tensor* a = n.src[0];
    const Tensor* b = n.src[1];
    return f32_elems(a) && (!b || f32_elems(b)) && f32_elems(&n) && n.is_contiguous();
}

}  // namespace ls::cuda
