#include <type_traits>

#include "backends/cuda/block_reduce.cuh"
#include "backends/cuda/elementwise.cuh"
#include "backends/cuda/quantize_act.cuh"
#include "backends/cuda/support_predicates.h"
#include "core/ir/op_params.h"
#include "core/quant/quant.h"

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
// kKeep: y is also written to keep (the staged row, for the fused quantizer).
template <bool kAdd, bool kKeep = false, class X>
__device__ inline void norm_out(X x, float rs, const float* w, int64_t first, int64_t K, int step, float* py, const float* pr, float* pz,
                                float* keep = nullptr) {
    strided_ahead(
        first, K, step, [&](int64_t i) { return NormIn{x(i), w ? w[i] : 1.0f, kAdd ? pr[i] : 0.0f}; },
        [&](int64_t i, NormIn in) {
            const float v = __fmul_rn(__fmul_rn(in.x, rs), in.w);
            py[i] = v;
            if constexpr (kAdd) pz[i] = __fadd_rn(in.r, v);
            if constexpr (kKeep) keep[i] = v;
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
// kAdd: with the add that follows (AddRows). kQuant: with the quantization of y for the
// mul_mat that follows (QuantRows): y is kept in shared memory, then the block's warps
// quantize it block by block as quantize_act_warp_kernel does.
constexpr int kStageMin = 512, kStageMax = 8192, kStageThreads = 256;

struct QuantRows {
    uint8_t* act = nullptr;  // the mul_mat's activation buffer: row r at r * row_bytes
    int64_t row_bytes = 0, n_blocks = 0;
    DType at = DType::F32;  // its dot type (warp_quantized)
    uint32_t unused = 0;    // no padding: a launch record compares argument bytes
};
static_assert(std::has_unique_object_representations_v<QuantRows>, "QuantRows has no padding bytes");

template <bool kAdd, bool kQuant = false>
__global__ void __launch_bounds__(kStageThreads)
rms_norm_staged_kernel(const uint8_t* x, Shape sx, const float* w, uint8_t* y, Shape sy, float eps, AddRows add, QuantRows qr) {
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
    // Each thread reads xs[i] before it writes y there (kQuant), and only its own i.
    norm_out<kAdd, kQuant>([&](int64_t i) { return xs[i]; }, rs, w, threadIdx.x, K, kStageThreads, py, pr, pz, xs);
    if constexpr (kQuant) {
        __syncthreads();
        const int lane = int(threadIdx.x % 32);
        for (int64_t b = threadIdx.x / 32; b < qr.n_blocks; b += kStageThreads / 32)
            quantize_block_warp(qr.at, xs, qr.act + r * qr.row_bytes, b, lane);
    }
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
                                                                                           shape_of(dst), eps, add, QuantRows{});
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

// The norm and the mul_mat that reads it (its activation, a quantized weight whose dot type
// the warp quantizer writes, rows the staged kernel takes): the norm's kernel leaves the rows
// quantized in the activation buffer, and mul_mat finds them there (Ctx::act_rows) instead
// of launching its quantizer; false (nothing launched) for any other pair.
bool rms_norm_mul_mat(const Tensor& norm, const Tensor& mm, Ctx& ctx) {
    const Tensor& x = *norm.src[0];
    const Tensor* wt = mm.src[0];
    const int64_t n_rows = x.nrows(), K = x.ne[0];
    if (mm.src[1] != &norm || !wt || norm.nelements() == 0 || !staged_rows(K, n_rows) || wt->ne[0] != K || !f32_elems(&norm) ||
        !supports_mul_mat(mm))
        return false;
    const DType at = vec_dot_type(wt->type);
    if (!warp_quantized(at) || K % cudaq::quant_block_elems(at) != 0) return false;
    const int64_t arb = int64_t(row_bytes(at, K));
    const QuantRows qr{static_cast<uint8_t*>(ctx.act_buffer(size_t(arb * n_rows))), arb, K / cudaq::quant_block_elems(at), at};
    const float* w = norm.src[1] ? reinterpret_cast<const float*>(dptr(*norm.src[1])) : nullptr;
    LS_LAUNCH((rms_norm_staged_kernel<false, true>), unsigned(n_rows), kStageThreads, ctx.stream)(
        dptr(x), shape_of(x), w, dptr(norm), shape_of(norm), norm.get_params<RmsNormParams>().eps, AddRows{}, qr);
    LS_CUDA_CHECK_LAUNCH("rms_norm_staged_kernel (quantized)");
    ctx.act_rows.src = &norm;
    ctx.act_rows.type = at;
    mul_mat(mm, ctx);
    return true;
}

// The norm and the add that reads it (add = norm + r or r + norm, r of the norm's shape),
// as one kernel; false (nothing launched) for any other pair.
bool rms_norm_add(const Tensor& norm, const Tensor& add, Ctx& ctx) {
    const Tensor* r = add.src[0] == &norm ? add.src[1] : add.src[0];
    auto same = [&](const Tensor* t) {
        return f32_elems(t) && same_ne(*t, norm);
    };
    // Where the add's output lies over part of the norm's input (the allocator may put it
    // there: that input is dead once the norm ran), only a single staged row is safe: its one
    // block reads the whole row into shared memory before it writes anything. (A decode
    // step's 512-wide tiny Gemma 3 had five of its six norm + add pairs placed so.)
    const Tensor& x = *norm.src[0];
    const bool one_staged_row = x.nrows() == 1 && staged_rows(x.ne[0], 1);
    if (add.src[0] == add.src[1] || !same(r) || !same(&add) || norm.nelements() == 0 || (!one_staged_row && !fused_output_safe(add, x)))
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
