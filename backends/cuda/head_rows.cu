// The per-head row ops between a layer's q/k/v projections and its attention, as one kernel
// (a fused group of CudaBackend::launch_all): each head's rms_norm (Gemma 3, Qwen3), rope, and
// the writes of K and V into the cache (set_rows). In a decode step these are six launches a
// layer of a few microseconds each whatever they do (a Gemma 3 270M step was some 400
// launches); as one, a CUDA block takes one row (a head of a token, or a token's V row), reads
// it into shared memory once and runs the row's ops in turn with the arithmetic of their own
// kernels (rms_norm.cu, rope.cu, set_rows.cu): the same bits.
#include <algorithm>
#include <array>
#include <cstring>
#include <type_traits>
#include <vector>

#include "backends/cuda/block_reduce.cuh"
#include "backends/cuda/elementwise.cuh"
#include "backends/cuda/last_reads.h"
#include "backends/cuda/quant_device.cuh"
#include "backends/cuda/support_predicates.h"
#include "core/ir/head_rows_group.h"
#include "core/ir/op_params.h"

namespace ls::cuda {
namespace {

constexpr int kRowThreads = 128;
constexpr int64_t kRowMax = 4096;  // floats of a row staged in shared memory
constexpr int kMaxChains = HeadRowsGroup::kMaxChains;  // q, k, v

// One chain of a group: rows of D floats of x, through the stages its flags name, in order.
// Row r is flattened row r of x (row_offset); it is head r % per_token of token r / per_token
// (rope's table row and set_rows' index), at element (r % per_token) * D of the cache row.
enum : int32_t { kNorm = 1, kRope = 2, kSet = 4, kNormOut = 8, kRopeOut = 16, kIdx64 = 32 };
struct RowChain {
    const uint8_t* x;
    const float* norm_w;  // null: no weight
    uint8_t* norm_y;      // written where kNormOut
    const float* cs;      // rope's cos/sin table
    uint8_t* rope_y;      // written where kRopeOut
    uint8_t* cache;
    const uint8_t* idx;
    Shape sx, sy, sr;
    int64_t cache_nb1, idx_nb0, rows, per_token, D;
    float eps;
    int32_t flags, rope_mode, n_dims, cache_type, block_elems;
};
// No padding: a launch record compares argument bytes.
static_assert(sizeof(RowChain) == 12 * 8 + 3 * sizeof(Shape) + 6 * 4, "RowChain has no padding bytes");
struct RowChains {
    RowChain c[kMaxChains];
    int64_t n;
};
static_assert(sizeof(RowChains) == kMaxChains * sizeof(RowChain) + 8, "RowChains has no padding bytes");

__device__ inline int64_t row_index(const RowChain& c, int64_t t) {
    return (c.flags & kIdx64) ? *reinterpret_cast<const int64_t*>(c.idx + t * c.idx_nb0)
                              : *reinterpret_cast<const int32_t*>(c.idx + t * c.idx_nb0);
}

__global__ void __launch_bounds__(kRowThreads) head_rows_kernel(RowChains a) {
    __shared__ float xs[kRowMax];
    __shared__ float rs_shared;
    int64_t r = blockIdx.x;
    int ci = 0;
    while (ci + 1 < a.n && r >= a.c[ci].rows) r -= a.c[ci].rows, ++ci;
    const RowChain& c = a.c[ci];
    const int tid = threadIdx.x;
    const int64_t D = c.D;
    const float* px = reinterpret_cast<const float*>(c.x + row_offset(c.sx, r));
    strided_ahead(tid, D, kRowThreads, [&](int64_t i) { return px[i]; }, [&](int64_t i, float v) { xs[i] = v; });
    __syncthreads();
    if (c.flags & kNorm) {  // rms_norm.cu: y = (x * r) * w, r = 1 / sqrt(canon_dot(x, x) / K + eps)
        if (tid < 32) {
            const float ss = warp_canon_dot(xs, xs, D, tid);
            if (tid == 0) rs_shared = canon_div(1.0f, canon_sqrt(__fadd_rn(canon_div(ss, float(D)), c.eps)));
        }
        __syncthreads();
        const float rs = rs_shared;
        float* py = (c.flags & kNormOut) ? reinterpret_cast<float*>(c.norm_y + row_offset(c.sy, r)) : nullptr;
        for (int64_t i = tid; i < D; i += kRowThreads) {
            const float v = __fmul_rn(__fmul_rn(xs[i], rs), c.norm_w ? c.norm_w[i] : 1.0f);
            xs[i] = v;
            if (py) py[i] = v;
        }
        __syncthreads();
    }
    const int64_t t = r / c.per_token;
    if (c.flags & kRope) {  // rope.cu: each pair by one thread, from the graph's table
        const int64_t half = c.n_dims / 2;
        for (int64_t i = tid; i < half; i += kRowThreads) {
            const float cv = c.cs[2 * (t * half + i)], sv = c.cs[2 * (t * half + i) + 1];
            const int64_t i0 = c.rope_mode == ROPE_NEOX ? i : 2 * i;
            const int64_t i1 = c.rope_mode == ROPE_NEOX ? i + half : 2 * i + 1;
            const float x0 = xs[i0], x1 = xs[i1];
            xs[i0] = __fsub_rn(__fmul_rn(x0, cv), __fmul_rn(x1, sv));
            xs[i1] = __fadd_rn(__fmul_rn(x0, sv), __fmul_rn(x1, cv));
        }
        __syncthreads();
        if (c.flags & kRopeOut) {
            float* py = reinterpret_cast<float*>(c.rope_y + row_offset(c.sr, r));
            for (int64_t i = tid; i < D; i += kRowThreads) py[i] = xs[i];
        }
    }
    if (c.flags & kSet) {  // set_rows.cu: the reference quantizer per block; a later token of the same row wins
        const int64_t dst = row_index(c, t), n_tok = c.rows / c.per_token;
        for (int64_t u = t + 1; u < n_tok; ++u)
            if (row_index(c, u) == dst) return;
        uint8_t* row = c.cache + dst * c.cache_nb1;
        const int64_t nblk = D / c.block_elems, b0 = (r % c.per_token) * nblk;
        for (int64_t b = tid; b < nblk; b += kRowThreads) cudaq::quant_block(DType(c.cache_type), xs + b * c.block_elems, row, b0 + b);
    }
}

// The chain's kernel arguments; false where its shapes or types do not fit the kernel.
bool plan_chain(const HeadRowChain& ch, size_t last, const LastReads& reads, RowChain& rc) {
    const Tensor& x = *ch.x;
    if (x.type != DType::F32 || x.nb[0] != sizeof(float)) return false;
    rc.x = dptr(x), rc.sx = shape_of(x);
    rc.D = x.ne[0], rc.rows = x.nrows(), rc.per_token = 1;
    if (ch.norm || ch.rope) rc.per_token = x.ne[1];
    if (ch.norm) {
        const Tensor* w = ch.norm->src[1];
        if (!f32_elems(ch.norm) || (w && (!f32_elems(w) || !w->is_contiguous() || w->ne[0] != rc.D))) return false;
        rc.flags |= kNorm;
        rc.eps = ch.norm->get_params<RmsNormParams>().eps;
        rc.norm_w = w ? reinterpret_cast<const float*>(dptr(*w)) : nullptr;
        if (reads.read_after(ch.norm, last)) rc.flags |= kNormOut, rc.norm_y = dptr(*ch.norm), rc.sy = shape_of(*ch.norm);
    }
    if (ch.rope) {
        const Tensor* cs = ch.rope->src[1];
        const RopeParams p = ch.rope->get_params<RopeParams>();
        if (x.ne[3] != 1 || !f32_elems(ch.rope) || !cs || !f32_elems(cs) || !cs->is_contiguous() || p.n_dims > rc.D) return false;
        rc.flags |= kRope;
        rc.cs = reinterpret_cast<const float*>(dptr(*cs));
        rc.rope_mode = p.mode, rc.n_dims = p.n_dims;
        if (reads.read_after(ch.rope, last)) rc.flags |= kRopeOut, rc.rope_y = dptr(*ch.rope), rc.sr = shape_of(*ch.rope);
    }
    if (ch.set) {
        const Tensor& s = *ch.set->src[0];
        const Tensor& idx = *ch.set->src[1];
        const Tensor& cache = *ch.set->src[2];
        if (ch.cur != ch.set) return false;
        if (ch.norm || ch.rope) {
            // The last stage's (D, P, T) rows as set_rows' (P * D, T) source: a reshape of it.
            const Tensor* prev = ch.rope ? ch.rope : ch.norm;
            if (!prev->is_contiguous() || !s.is_contiguous() || view_base(&s) != view_base(prev) || dptr(s) != dptr(*prev) ||
                s.ne[0] != rc.D * rc.per_token || s.ne[1] * rc.per_token != rc.rows)
                return false;
        } else if (&s != ch.x) {
            return false;
        }
        // A cache (persistent): no chain's input lies in it. (set_rows into an intermediate,
        // such as the image rows written into the embeddings, runs apart.)
        if (view_base(&cache)->kind != TensorKind::Persistent || !cudaq::quant_supported(cache.type) || !cache_type(cache.type) ||
            !cache.is_contiguous() || !index_type(&idx))
            return false;
        const int be = cudaq::quant_block_elems(cache.type);
        if (rc.D % be != 0 || idx.ne[0] != rc.rows / rc.per_token) return false;
        rc.flags |= kSet | (idx.type == DType::I64 ? kIdx64 : 0);
        rc.cache = dptr(cache), rc.cache_nb1 = int64_t(cache.nb[1]);
        rc.idx = dptr(idx), rc.idx_nb0 = int64_t(idx.nb[0]);
        rc.cache_type = int32_t(cache.type), rc.block_elems = be;
    }
    return rc.D > 0 && rc.D <= kRowMax && rc.rows > 0;
}

}  // namespace

size_t head_rows(const std::vector<Tensor*>& nodes, size_t i, Ctx& ctx) {
    if (!ctx.reads) return 0;
    const HeadRowsGroup gr = find_head_rows(nodes, i);
    const auto& ch = gr.chains;
    const int nc = gr.n;
    const size_t j = i + gr.nodes;
    if (j - i < 2) return 0;
    const size_t last = j - 1;
    RowChains a;
    std::memset(&a, 0, sizeof a);
    a.n = nc;
    int64_t total = 0;
    for (int c = 0; c < nc; ++c) {
        if (!plan_chain(ch[size_t(c)], last, *ctx.reads, a.c[c])) return 0;
        total += a.c[c].rows;
    }
    if (total > 0x7fffffff) return 0;
    // Each block reads its row whole before it writes, so an output may be its own chain's input
    // as the very same view; else the outputs written must lie apart from every input row and
    // from each other (the allocator may place a group node's output over an input that died
    // at an earlier node of the group).
    std::array<std::pair<const Tensor*, int>, 2 * kMaxChains> outs;
    size_t n_out = 0;
    for (int c = 0; c < nc; ++c) {
        if (a.c[c].flags & kNormOut) outs[n_out++] = {ch[size_t(c)].norm, c};
        if (a.c[c].flags & kRopeOut) outs[n_out++] = {ch[size_t(c)].rope, c};
    }
    for (size_t u = 0; u < n_out; ++u) {
        for (int c = 0; c < nc; ++c) {
            const Tensor& x = *ch[size_t(c)].x;
            if (x.kind == TensorKind::Persistent) continue;
            if (!(outs[u].second == c ? fused_output_safe(*outs[u].first, x) : bytes_apart(*outs[u].first, x))) return 0;
        }
        for (size_t v = u + 1; v < n_out; ++v)
            if (!bytes_apart(*outs[u].first, *outs[v].first)) return 0;
    }
    LS_LAUNCH(head_rows_kernel, unsigned(total), kRowThreads, ctx.stream)(a);
    LS_CUDA_CHECK_LAUNCH("head_rows_kernel");
    return j - i;
}

}  // namespace ls::cuda
