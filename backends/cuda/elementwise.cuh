// The elementwise launch patterns (unary over contiguous floats, binary with broadcast) and
// the block width the simple kernels launch with. Kept apart from the reductions
// (block_reduce.cuh) so that an elementwise op pulls in no shared-memory code.
#pragma once
#include <cuda_runtime.h>

#include <stdexcept>

#include "backends/cuda/launch_context.h"
#include "backends/cuda/read_ahead.cuh"
#include "backends/cuda/support_predicates.h"
#include "backends/cuda/tensor_shape.cuh"
#include "core/rules/canon.h"

namespace ls::cuda {

constexpr int kThreads = 256;

// y[i] = f(x[i]) over n contiguous floats.
template <class F> __global__ void unary_kernel(const float* x, float* y, int64_t n, F f) {
    const int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
    if (i < n) y[i] = f(x[i]);
}
template <class F> void launch_unary(const Tensor& dst, Ctx& ctx, F f, const char* name) {
    const int64_t n = dst.nelements();
    if (n == 0) return;
    LS_LAUNCH(unary_kernel<F>, blocks_for(n, kThreads), kThreads, ctx.stream)(
        reinterpret_cast<const float*>(dptr(*dst.src[0])), reinterpret_cast<float*>(dptr(dst)), n, f);
    check(cudaGetLastError(), name, __FILE__, __LINE__);
}

// An activation and the product that reads it as one kernel (cuda_backend.cpp's fused pairs):
// y = f(x), z = y * o over n contiguous floats. Both outputs are written, so any other
// reader of y finds it; the arithmetic is the two kernels' (the product is commutative).
template <class F> __global__ void unary_mul_kernel(const float* x, float* y, const float* o, float* z, int64_t n, F f) {
    const int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
    if (i >= n) return;
    const float v = f(x[i]);
    y[i] = v;
    z[i] = v * o[i];
}
// act (a unary op's node) followed by mul = act * other or other * act, every operand
// contiguous with act's shape; false (nothing launched) for any other pair.
template <class F> bool launch_unary_mul(const Tensor& act, const Tensor& mul, Ctx& ctx, F f) {
    const Tensor* o = mul.src[0] == &act ? mul.src[1] : mul.src[0];
    auto same = [&](const Tensor* t) { return t && t->type == DType::F32 && t->is_contiguous() && same_shape(*t, act); };
    if (mul.src[0] == mul.src[1] || !same(o) || !same(&mul) || !act.is_contiguous() || !act.src[0]->is_contiguous() ||
        !fused_output_safe(mul, *act.src[0]))
        return false;
    const int64_t n = act.nelements();
    if (n == 0) return false;
    LS_LAUNCH(unary_mul_kernel<F>, blocks_for(n, kThreads), kThreads, ctx.stream)(
        reinterpret_cast<const float*>(dptr(*act.src[0])), reinterpret_cast<float*>(dptr(act)),
        reinterpret_cast<const float*>(dptr(*o)), reinterpret_cast<float*>(dptr(mul)), n, f);
    check(cudaGetLastError(), "launch of unary_mul_kernel", __FILE__, __LINE__);
    return true;
}

// dst = f(a, b) with b broadcast over a (b->ne[i] divides a->ne[i]), as ref::broadcast_binary.
template <class F> __global__ void binary_kernel(const uint8_t* a, Shape sa, const uint8_t* b, Shape sb, uint8_t* d, Shape sd, F f) {
    const int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
    const int64_t n = sa.ne[0] * sa.ne[1] * sa.ne[2] * sa.ne[3];
    if (i >= n) return;
    const int64_t i0 = i % sa.ne[0], i1 = (i / sa.ne[0]) % sa.ne[1], i2 = (i / (sa.ne[0] * sa.ne[1])) % sa.ne[2],
                  i3 = i / (sa.ne[0] * sa.ne[1] * sa.ne[2]);
    const float x = *reinterpret_cast<const float*>(a + i0 * 4 + i1 * sa.nb[1] + i2 * sa.nb[2] + i3 * sa.nb[3]);
    const float y = *reinterpret_cast<const float*>(b + (i0 % sb.ne[0]) * 4 + (i1 % sb.ne[1]) * sb.nb[1] +
                                                    (i2 % sb.ne[2]) * sb.nb[2] + (i3 % sb.ne[3]) * sb.nb[3]);
    *reinterpret_cast<float*>(d + i0 * 4 + i1 * sd.nb[1] + i2 * sd.nb[2] + i3 * sd.nb[3]) = f(x, y);
}
template <class F> void launch_binary(const Tensor& dst, Ctx& ctx, F f, const char* name) {
    const Tensor& a = *dst.src[0];
    const Tensor& b = *dst.src[1];
    const int64_t n = a.nelements();
    if (n == 0) return;
    LS_LAUNCH(binary_kernel<F>, blocks_for(n, kThreads), kThreads, ctx.stream)(dptr(a), shape_of(a), dptr(b), shape_of(b), dptr(dst),
                                                                         shape_of(dst), f);
    check(cudaGetLastError(), name, __FILE__, __LINE__);
}

}  // namespace ls::cuda
