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

// The add that follows a norm in the graph (a residual: z = r + y), run by the norm's kernel
// (CudaBackend's fused pairs); y is written as well. Every operand has x's shape, so
// row_offset finds row r in each.
struct AddRows {
    const uint8_t* r = nullptr;  // the add's other operand
    Shape sr{};
    uint8_t* z = nullptr;  // the add's output
    Shape sz{};
};
// Elements first, first + step, ... of a row: y = (x * rs) * w and, with kAdd, z = r + y (pr,
// pz: the add's rows); x(i) reads element i of the input. Each element's x, w and r are read
// before its outputs are written, several elements' at a time (strided_ahead).
struct NormIn {
    float x, w, r;
};
template <bool kAdd, class X>
__device__ inline void norm_out(X x, float rs, const float* w, int64_t first, int64_t K, int step, float* py, const float* pr, float* pz) {
    strided_ahead(
        first, K, step, [&](int64_t i) { return NormIn{x(i), w ? w[i] : 1.0f, kAdd ? pr[i] : 0.0f}; },
        [&](int64_t i, NormIn in) {
            const float v = __fmul_rn(__fmul_rn(in.x, rs), in.w);
            py[i] = v;
            if constexpr (kAdd) pz[i] = __fadd_rn(in.r, v);
        });
}
// Row r of the add's operand and output (null without the add).
template <bool kAdd> __device__ inline const float* add_in(const AddRows& a, int64_t r) {
    return kAdd ? reinterpret_cast<const float*>(a.r + row_offset(a.sr, r)) : nullptr;
}
template <bool kAdd> __device__ inline float* add_out(const AddRows& a, int64_t r) {
    return kAdd ? reinterpret_cast<float*>(a.z + row_offset(a.sz, r)) : nullptr;
}

template <bool kAdd>
__global__ void __launch_bounds__(32 * kRowWarps)
rms_norm_kernel(const uint8_t* x, Shape sx, const float* w, uint8_t* y, Shape sy, float eps, int64_t n_rows, AddRows add) {
    const int64_t r = int64_t(blockIdx.x) * kRowWarps + threadIdx.y, K = sx.ne[0];
    if (r >= n_rows) return;  // the whole warp
    const int lane = threadIdx.x;
    const float* px = reinterpret_cast<const float*>(x + row_offset(sx, r));
    float* py = reinterpret_cast<float*>(y + row_offset(sy, r));
    const float ss = warp_canon_dot(px, px, K, lane);
    const float rs = canon_div(1.0f, canon_sqrt(__fadd_rn(canon_div(ss, float(K)), eps)));
    const float* pr = add_in<kAdd>(add, r);
    float* pz = add_out<kAdd>(add, r);
    norm_out<kAdd>([&](int64_t i) { return px[i]; }, rs, w, lane, K, 32, py, pr, pz);
}

// Wide rows (a model's hidden state: 640 to 8192): a block per row. Its 256 threads first
// copy the row into shared memory, many loads in flight at once; then one warp takes the
// canonical sum from there (the same sequence as above) and all threads write. With a warp
// alone, each lane's loads of a 4096-wide row followed one another: 52 us on an H200.
// kAdd: with the add that follows (AddRows).
constexpr int kStageMin = 512, kStageMax = 8192, kStageThreads = 256;

template <bool kAdd>
__global__ void __launch_bounds__(kStageThreads)
rms_norm_staged_kernel(const uint8_t* x, Shape sx, const float* w, uint8_t* y, Shape sy, float eps, AddRows add) {
    __shared__ float xs[kStageMax];
    __shared__ float rs_shared;
    const int64_t r = blockIdx.x, K = sx.ne[0];
    const float* px = reinterpret_cast<const float*>(x + row_offset(sx, r));
    float* py = reinterpret_cast<float*>(y + row_offset(sy, r));
    strided_ahead(threadIdx.x, K, kStageThreads, [&](int64_t i) { return px[i]; }, [&](int64_t i, float v) { xs[i] = v; });
    __syncthreads();
    if (threadIdx.x < 32) {
        const float ss = warp_canon_dot(xs, xs, K, int(threadIdx.x));
        if (threadIdx.x == 0) rs_shared = canon_div(1.0f, canon_sqrt(__fadd_rn(canon_div(ss, float(K)), eps)));
    }
    __syncthreads();
    const float rs = rs_shared;
    const float* pr = add_in<kAdd>(add, r);
    float* pz = add_out<kAdd>(add, r);
    norm_out<kAdd>([&](int64_t i) { return xs[i]; }, rs, w, threadIdx.x, K, kStageThreads, py, pr, pz);
}

bool staged_rows(int64_t K, int64_t n_rows) { return K >= kStageMin && K <= kStageMax && n_rows <= 0x7fffffff; }

// The norm node's kernel, with the add that follows where add is given.
template <bool kAdd> void launch_norm(const Tensor& dst, const AddRows& add, Ctx& ctx) {
    const Tensor& x = *dst.src[0];
    const float* w = dst.src[1] ? reinterpret_cast<const float*>(dptr(*dst.src[1])) : nullptr;
    const int64_t n_rows = x.nrows(), K = x.ne[0];
    const float eps = dst.get_params<RmsNormParams>().eps;
    if (staged_rows(K, n_rows)) {
        LS_LAUNCH(rms_norm_staged_kernel<kAdd>, unsigned(n_rows), kStageThreads, ctx.stream)(dptr(x), shape_of(x), w, dptr(dst),
                                                                                           shape_of(dst), eps, add);
        LS_CUDA_CHECK_LAUNCH("rms_norm_staged_kernel");
        return;
    }
    LS_LAUNCH(rms_norm_kernel<kAdd>, blocks_for(n_rows, kRowWarps), dim3(32, kRowWarps), ctx.stream)(
        dptr(x), shape_of(x), w, dptr(dst), shape_of(dst), eps, n_rows, add);
    LS_CUDA_CHECK_LAUNCH("rms_norm_kernel");
}
}  // namespace

void rms_norm(const Tensor& dst, Ctx& ctx) {
    if (dst.src[0]->nelements() == 0) return;
    launch_norm<false>(dst, AddRows{}, ctx);
}

// The norm and the add that reads it (add = norm + r or r + norm, r of the norm's shape),
// as one kernel; false (nothing launched) for any other pair.
bool rms_norm_add(const Tensor& norm, const Tensor& add, Ctx& ctx) {
    const Tensor* r = add.src[0] == &norm ? add.src[1] : add.src[0];
    auto same = [&](const Tensor* t) {
        return f32_elems(t) && same_ne(*t, norm);
    };
    if (add.src[0] == add.src[1] || !same(r) || !same(&add) || norm.nelements() == 0 || !fused_output_safe(add, *norm.src[0]))
        return false;
    launch_norm<true>(norm, AddRows{dptr(*r), shape_of(*r), dptr(add), shape_of(add)}, ctx);
    return true;
}

bool supports_rms_norm(const Tensor& n) {
    const Tensor* a = n.src[0];
    const Tensor* b = n.src[1];
    return f32_elems(a) && (!b || (f32_elems(b) && b->is_contiguous())) && f32_elems(&n);
}

}  // namespace ls::cuda
