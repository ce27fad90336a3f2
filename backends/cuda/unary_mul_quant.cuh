// An activation, the product that reads it and the quantization of that product for the
// mul_mats that read it (a gated FFN's gelu/silu, its mul with up, the down projection's
// activation rows), as one kernel: CudaBackend::launch_fused's form of the pair in
// elementwise.cuh (launch_unary_mul) when a mul_mat follows. Blocks of 256 elements, each a
// whole number of the dot type's blocks, quantized by the block's warps from shared memory as
// quantize_act_warp_kernel does: the same bytes.
#pragma once
#include "backends/cuda/elementwise.cuh"
#include "backends/cuda/quant_device.cuh"
#include "backends/cuda/quantize_act.cuh"
#include "core/quant/quant.h"

namespace ls::cuda {

constexpr int kUnaryQuantThreads = 256;

// Where the product's rows go, quantized: row m at act + m * row_bytes, K elements a row.
struct QuantTo {
    uint8_t* act;
    int64_t K, row_bytes, block_bytes;
    int32_t at, block_elems;  // the dot type (warp_quantized) and its block's elements
};
static_assert(sizeof(QuantTo) == 4 * 8 + 2 * 4, "QuantTo has no padding bytes");

template <class F>
__global__ void __launch_bounds__(kUnaryQuantThreads)
unary_mul_quant_kernel(const float* x, float* y, const float* o, float* z, int64_t n, F f, QuantTo q) {
    __shared__ float zs[kUnaryQuantThreads];
    const int tid = threadIdx.x;
    const int64_t first = int64_t(blockIdx.x) * kUnaryQuantThreads, i = first + tid;
    if (i < n) {
        const float v = f(x[i]);
        y[i] = v;
        zs[tid] = z[i] = v * o[i];
    }
    __syncthreads();
    const int lane = tid % 32;
    for (int j = tid / 32; j < kUnaryQuantThreads / q.block_elems; j += kUnaryQuantThreads / 32) {
        const int64_t e0 = first + int64_t(j) * q.block_elems;
        if (e0 >= n) break;
        const int64_t m = e0 / q.K, b = (e0 % q.K) / q.block_elems;
        quantize_block_warp(DType(q.at), zs + j * q.block_elems, q.act + m * q.row_bytes + b * q.block_bytes, 0, lane);
    }
}

// act, then mul = act * other (launch_unary_mul's pair), then mms[0..nm) (a run, mul_mat_run)
// reading mul: false (nothing launched) where the pair or the quantization does not fit.
template <class F> bool launch_unary_mul_mat(const Tensor& act, const Tensor& mul, Tensor* const* mms, int nm, Ctx& ctx, F f) {
    if (nm < 1) return false;
    const Tensor* o = mul.src[0] == &act ? mul.src[1] : mul.src[0];
    auto same = [&](const Tensor* t) { return t && t->type == DType::F32 && t->is_contiguous() && same_shape(*t, act); };
    if (mul.src[0] == mul.src[1] || !same(o) || !same(&mul) || !act.is_contiguous() || !act.src[0]->is_contiguous() ||
        !fused_output_safe(mul, *act.src[0]))
        return false;
    const Tensor& mm = *mms[0];
    const Tensor* w = mm.src[0];
    const int64_t n = act.nelements(), K = mul.ne[0];
    if (n == 0 || mm.src[1] != &mul || !w || w->ne[0] != K || !supports_mul_mat(mm)) return false;
    const DType at = vec_dot_type(w->type);
    if (!warp_quantized(at)) return false;
    const int be = cudaq::quant_block_elems(at);
    if (kUnaryQuantThreads % be != 0 || K % be != 0) return false;
    const int64_t arb = int64_t(row_bytes(at, K));
    const QuantTo q{static_cast<uint8_t*>(ctx.act_buffer(size_t(arb * mul.nrows()))), K, arb, arb / (K / be), int32_t(at), be};
    LS_LAUNCH(unary_mul_quant_kernel<F>, blocks_for(n, kUnaryQuantThreads), kUnaryQuantThreads, ctx.stream)(
        reinterpret_cast<const float*>(dptr(*act.src[0])), reinterpret_cast<float*>(dptr(act)), reinterpret_cast<const float*>(dptr(*o)),
        reinterpret_cast<float*>(dptr(mul)), n, f, q);
    check(cudaGetLastError(), "launch of unary_mul_quant_kernel", __FILE__, __LINE__);
    ctx.act_rows.src = &mul;
    ctx.act_rows.type = at;
    mul_mat_group(mms, nm, ctx);
    return true;
}

}  // namespace ls::cuda
