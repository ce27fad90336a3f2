#include <type_traits>
#include <vector>

#include "backends/cuda/block_reduce.cuh"
#include "backends/cuda/last_reads.h"
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

// A residual step and the norm of its sum, as Gemma's sublayers end and begin: y1 = norm1(x),
// z = r + y1, y2 = norm2(z), with y2 quantized for the mul_mats that read it (or, the other
// models, z = r + x, y2 = norm2(z)). One block a
// row, staged as above: x, then z, then y2 in shared memory, each norm's sum by one warp from
// there. y1 is written only where a later node reads it (write_y1).
struct SecondNorm {
    const float* w;  // norm2's weight (null: none)
    uint8_t* y;
    Shape sy;
    float eps;
    int32_t write_y1;
};
static_assert(sizeof(SecondNorm) == 2 * 8 + sizeof(Shape) + 2 * 4, "SecondNorm has no padding bytes");

// kNorm1 false: the residual step alone first (z = r + x: Llama's and most models' add, then
// the next sublayer's norm); w, y, sy, eps unused.
template <bool kNorm1>
__global__ void __launch_bounds__(kStageThreads)
rms_norm_add_norm_kernel(const uint8_t* x, Shape sx, const float* w, uint8_t* y, Shape sy, float eps, AddRows add, SecondNorm n2,
                         QuantRows qr) {
    __shared__ float xs[kStageMax];
    __shared__ float rs_shared;
    const int64_t r = blockIdx.x, K = sx.ne[0];
    const int tid = threadIdx.x;
    const float* px = reinterpret_cast<const float*>(x + row_offset(sx, r));
    strided_ahead(tid, K, kStageThreads, [&](int64_t i) { return px[i]; }, [&](int64_t i, float v) { xs[i] = v; });
    __syncthreads();
    if (kNorm1 && tid < 32) {
        const float ss = warp_canon_dot(xs, xs, K, tid);
        if (tid == 0) rs_shared = canon_div(1.0f, canon_sqrt(__fadd_rn(canon_div(ss, float(K)), eps)));
    }
    if (kNorm1) __syncthreads();
    const float rs = kNorm1 ? rs_shared : 1.0f;
    float* py = kNorm1 && n2.write_y1 ? reinterpret_cast<float*>(y + row_offset(sy, r)) : nullptr;
    const float* pr = add_in<true>(add, r);
    float* pz = add_out<true>(add, r);
    strided_ahead(
        tid, K, kStageThreads, [&](int64_t i) { return NormIn{xs[i], kNorm1 && w ? w[i] : 1.0f, pr[i]}; },
        [&](int64_t i, NormIn in) {
            const float v = kNorm1 ? __fmul_rn(__fmul_rn(in.x, rs), in.w) : in.x;
            if (py) py[i] = v;
            const float z = __fadd_rn(in.r, v);
            pz[i] = z;
            xs[i] = z;
        });
    __syncthreads();
    if (tid < 32) {
        const float ss = warp_canon_dot(xs, xs, K, tid);
        if (tid == 0) rs_shared = canon_div(1.0f, canon_sqrt(__fadd_rn(canon_div(ss, float(K)), n2.eps)));
    }
    __syncthreads();
    const float rs2 = rs_shared;
    float* py2 = reinterpret_cast<float*>(n2.y + row_offset(n2.sy, r));
    for (int64_t i = tid; i < K; i += kStageThreads) {
        const float v = __fmul_rn(__fmul_rn(xs[i], rs2), n2.w ? n2.w[i] : 1.0f);
        py2[i] = v;
        xs[i] = v;
    }
    __syncthreads();
    const int lane = tid % 32;
    for (int64_t b = tid / 32; b < qr.n_blocks; b += kStageThreads / 32) quantize_block_warp(qr.at, xs, qr.act + r * qr.row_bytes, b, lane);
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

// The norm and the mul_mats that read it (its activation, a quantized weight whose dot type
// the warp quantizer writes, rows the staged kernel takes; mms[1..n) as mms[0]): the norm's
// kernel leaves the rows quantized in the activation buffer, and mul_mat finds them there
// (Ctx::act_rows) instead of launching its quantizer; false (nothing launched) otherwise.
bool rms_norm_mul_mat(const Tensor& norm, Tensor* const* mms, int n, Ctx& ctx) {
    if (n < 1) return false;
    const Tensor& mm = *mms[0];
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
    mul_mat_group(mms, n, ctx);
    return true;
}

size_t rms_norm_add_norm(const std::vector<Tensor*>& nodes, size_t i, Ctx& ctx) {
    // norm1, add, norm2 (Gemma), or add, norm2 (the others): the add at node i + a.
    const size_t a = nodes[i]->op == OpId::RMS_NORM ? 1 : 0;
    if (!ctx.reads || i + a + 2 >= nodes.size()) return 0;
    const Tensor* n1 = a ? nodes[i] : nullptr;
    const Tensor &add = *nodes[i + a], &n2 = *nodes[i + a + 1];
    if (add.op != OpId::ADD || n2.op != OpId::RMS_NORM || (n1 && add.src[0] != n1 && add.src[1] != n1) || n2.src[0] != &add ||
        add.src[0] == add.src[1])
        return 0;
    const int n = mul_mat_run(nodes, i + a + 2);
    if (n < 1 || nodes[i + a + 2]->src[1] != &n2) return 0;
    // The row staged first (norm1's input, or the add's first operand) and the add's other one.
    const Tensor& x = n1 ? *n1->src[0] : *add.src[0];
    const Tensor* r = !n1 ? add.src[1] : add.src[0] == n1 ? add.src[1] : add.src[0];
    const Tensor* wt = nodes[i + a + 2]->src[0];
    const int64_t n_rows = x.nrows(), K = x.ne[0];
    auto same = [&](const Tensor* t) { return t && f32_elems(t) && same_shape(*t, add); };
    if (!same(&x) || !same(r) || !same(&n2) || (n1 && !same(n1)) || add.nelements() == 0 || !staged_rows(K, n_rows) || wt->ne[0] != K)
        return 0;
    for (const Tensor* nw : {n1 ? n1->src[1] : nullptr, n2.src[1]})
        if (nw && (!f32_elems(nw) || !nw->is_contiguous() || nw->ne[0] < K)) return 0;
    const DType at = vec_dot_type(wt->type);
    if (!warp_quantized(at) || K % cudaq::quant_block_elems(at) != 0) return 0;
    // norm1's output, read by the add: written only where a node after the add reads it too.
    const bool write_y1 = n1 && ctx.reads->read_after(n1, i + 1);
    // Several rows run in blocks side by side: what a block writes must lie apart from what
    // another reads or writes (the allocator may put the add's and norm2's outputs over inputs
    // that died at an earlier node of the group). A single row's block reads x whole before
    // it writes, r before it writes y2, and writes y1 before y2.
    if (n_rows > 1) {
        std::vector<const Tensor*> outs = {&add, &n2};
        if (write_y1) outs.push_back(n1);
        for (size_t u = 0; u < outs.size(); ++u) {
            for (const Tensor* in : {&x, r})
                if (!bytes_apart(*outs[u], *in)) return 0;
            for (size_t v = u + 1; v < outs.size(); ++v)
                if (!bytes_apart(*outs[u], *outs[v])) return 0;
        }
    }
    const int64_t arb = int64_t(row_bytes(at, K));
    const QuantRows qr{static_cast<uint8_t*>(ctx.act_buffer(size_t(arb * n_rows))), arb, K / cudaq::quant_block_elems(at), at};
    const SecondNorm sn{n2.src[1] ? reinterpret_cast<const float*>(dptr(*n2.src[1])) : nullptr, dptr(n2), shape_of(n2),
                        n2.get_params<RmsNormParams>().eps, write_y1 ? 1 : 0};
    const AddRows ar{dptr(*r), shape_of(*r), dptr(add), shape_of(add)};
    if (n1) {
        const float* w1 = n1->src[1] ? reinterpret_cast<const float*>(dptr(*n1->src[1])) : nullptr;
        LS_LAUNCH(rms_norm_add_norm_kernel<true>, unsigned(n_rows), kStageThreads, ctx.stream)(
            dptr(x), shape_of(x), w1, dptr(*n1), shape_of(*n1), n1->get_params<RmsNormParams>().eps, ar, sn, qr);
    } else {
        LS_LAUNCH(rms_norm_add_norm_kernel<false>, unsigned(n_rows), kStageThreads, ctx.stream)(dptr(x), shape_of(x), nullptr, nullptr,
                                                                                             shape_of(x), 0.0f, ar, sn, qr);
    }
    LS_CUDA_CHECK_LAUNCH("rms_norm_add_norm_kernel");
    ctx.act_rows.src = &n2;
    ctx.act_rows.type = at;
    mul_mat_group(&nodes[i + a + 2], n, ctx);
    return a + 2 + size_t(n);
}

// The norm and the add that reads it (add = norm + r or r + norm, r of the norm's shape),
// as one kernel; false (nothing launched) for any other pair.
bool rms_norm_add(const Tensor& norm, const Tensor& add, Ctx& ctx) {
    const Tensor* r = add.src[0] == &norm ? add.src[1] : add.src[0];
    auto same = [&](const Tensor* t) {
        return f32_elems(t) && same_shape(*t, norm);
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
