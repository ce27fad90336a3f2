// The attention kernels (launched by attention.cu). A header so that tests/backends/test_cuda_emu.cpp
// can run them on the host, bit for bit against ref::attention, without a GPU.
//
// They compute SEMANTICS.md section 1 with the arithmetic of core/rules/attention_rule.h, as
// ref::attention does: query (s, p) reads keys attn_first_of(..)..p of slot s, key k at
// cache row ring_row(s, k, R), cut in blocks of kAttnBlock absolute positions. Per block b:
//  1. s_k = canon_dot(q, k_k) * scale, soft-capped (softcap * det_tanh(s_k / softcap)): a
//     warp per key, lane l holding canon_dot's partial sum l (block_reduce.cuh);
//  2. m_b = max s_k, p_k = det_exp(s_k - m_b);
//  3. l_b = sum of p_k and o_b[i] = sum of p_k v_k[i], each in key order from +0 (each
//     thread owns outputs i = tid, tid + kAttnThreads, ...);
// then the partials fold in increasing b (attn_fold), the head's sink logit, when the node
// has sinks, folds in after the last block (attn_fold_sink), and out[i] = o[i] / l.
// A block's partial depends on that block alone, so a query's key blocks may be spread over
// several CUDA blocks (split-K, for decode: few queries over a long context): each writes
// its partials to a scratch buffer, and attention_fold_kernel folds them in block order,
// the very fold a single CUDA block runs in its registers. The split never changes a bit.
#pragma once
#include <algorithm>
#include <climits>
#include <cstdint>
#include <type_traits>

#include "backends/cuda/block_reduce.cuh"
#include "backends/cuda/quant_device.cuh"
#include "core/rules/attention_rule.h"
#include "core/quant/dtype.h"

namespace ls::cuda {
namespace {

constexpr int kAttnWarps = 4, kAttnThreads = 32 * kAttnWarps;
// The widest key and value heads (the query is staged in shared memory; a thread owns at
// most kAttnMaxHead / kAttnThreads outputs).
constexpr int64_t kAttnMaxHead = 1024;
static_assert(kAttnBlock <= kAttnThreads, "a thread per key of a block computes its p_k");

// The launch's view of one attention node. Grid: (head h, query t0 + y, split z).
// The 4-byte fields come last, six of them, so that the struct has no padding: a launch
// record compares argument bytes, and padding holds whatever was on the stack (a graph node
// set again for nothing, and a test of node updates that passed by chance).
struct AttnArgs {
    const float* q;
    Shape sq;
    const uint8_t* kc;
    int64_t k_nb1;
    const uint8_t* vc;
    int64_t v_nb1;
    const int32_t *pos, *seq;  // per query (device)
    int64_t t0;                // the launch's first query
    int64_t n_q;               // the node's queries: with W = kAttnFirstGiven, pos[n_q + t] is t's first key
    int64_t R, group;
    int64_t Dv;
    uint8_t* out;
    Shape so;
    // Split z of a query takes its key blocks z * blocks_per_split .. + blocks_per_split - 1
    // (counted from the query's first block). partials null: one split covers every block
    // and the CUDA block writes the output. Otherwise each key block's (m_b, l_b, o_b[Dv])
    // goes to partials, nb_max rows of Dv + 2 floats per (query, head).
    int64_t blocks_per_split;
    float* partials;
    int64_t nb_max;
    const float* sinks;  // F32 [H] (device) or null: folded in before the division
    DType kt, vt;
    int32_t W;
    float scale, softcap;
    uint32_t unused = 0;
};
static_assert(sizeof(AttnArgs) == 17 * 8 + 2 * sizeof(Shape) + 6 * 4, "AttnArgs has no padding bytes");

// The outputs of (head h, launch query y), and the partial row jb of that pair.
__device__ inline float* attn_out(const AttnArgs& a, int64_t h, int64_t t) {
    return reinterpret_cast<float*>(a.out + h * a.so.nb[1] + t * a.so.nb[2]);
}
__device__ inline float* attn_partial(const AttnArgs& a, int64_t h, int64_t y, int64_t jb) {
    return a.partials + ((y * a.sq.ne[1] + h) * a.nb_max + jb) * (a.Dv + 2);
}

// KOUT outputs per thread: the smallest of 1, 2, 4, 8 with KOUT * kAttnThreads >= Dv.
template <int KOUT>
__global__ void __launch_bounds__(kAttnThreads) attention_kernel(AttnArgs a) {
    __shared__ float qs[kAttnMaxHead];
    __shared__ float ps[kAttnBlock];  // the block's scores, then its p_k
    const int64_t h = blockIdx.x, y = blockIdx.y, t = a.t0 + y, Dk = a.sq.ne[0], Dv = a.Dv, hk = h / a.group;
    const int64_t s = a.seq[t], pt = a.pos[t], k0 = attn_first_of(a.pos, t, a.n_q, a.W);
    const int64_t b_first = attn_block_of(k0), b_last = attn_block_of(pt);
    const int64_t b0 = b_first + int64_t(blockIdx.z) * a.blocks_per_split;
    const int64_t b1 = b0 + a.blocks_per_split - 1 < b_last ? b0 + a.blocks_per_split - 1 : b_last;
    if (b0 > b_last) return;  // the whole block: this query has fewer key blocks
    const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32;
    const float* qh = reinterpret_cast<const float*>(reinterpret_cast<const uint8_t*>(a.q) + h * a.sq.nb[1] + t * a.sq.nb[2]);
    for (int64_t i = tid; i < Dk; i += kAttnThreads) qs[i] = qh[i];
    float m = 0, l = 0, o[KOUT], ob[KOUT];
    for (int r = 0; r < KOUT; ++r) o[r] = 0;
    for (int64_t b = b0; b <= b1; ++b) {
        const int64_t lo = k0 > b * kAttnBlock ? k0 : b * kAttnBlock;
        const int64_t hi = pt < b * kAttnBlock + kAttnBlock - 1 ? pt : b * kAttnBlock + kAttnBlock - 1;
        const int nk = int(hi - lo + 1);
        __syncthreads();  // qs is written; the previous block's p_k have been read
        // 1. scores, a warp per key.
        for (int j = warp; j < nk; j += kAttnWarps) {
            const uint8_t* krow = a.kc + ring_row(s, lo + j, a.R) * a.k_nb1;
            const float d = warp_canon_sum(Dk, lane, [&](int64_t i) { return __fmul_rn(qs[i], cudaq::deq_elem(a.kt, krow, hk * Dk + i)); });
            float x = __fmul_rn(d, a.scale);
            if (a.softcap > 0) x = __fmul_rn(a.softcap, det_tanh(canon_div(x, a.softcap)));
            if (lane == 0) ps[j] = x;
        }
        __syncthreads();
        // 2. m_b (every thread, in key order as the reference), then p_k.
        float mb = -INFINITY;
        for (int j = 0; j < nk; ++j) mb = fmaxf(mb, ps[j]);
        __syncthreads();  // every thread has read the scores
        if (tid < nk) ps[tid] = det_exp(__fsub_rn(ps[tid], mb));
        __syncthreads();
        // 3. l_b (every thread the same chain) and the thread's o_b[i], in key order.
        float lb = 0;
        for (int r = 0; r < KOUT; ++r) ob[r] = 0;
        for (int j = 0; j < nk; ++j) {
            const float pk = ps[j];
            lb = __fadd_rn(lb, pk);
            const uint8_t* vrow = a.vc + ring_row(s, lo + j, a.R) * a.v_nb1;
            for (int r = 0; r < KOUT; ++r) {
                const int64_t i = tid + int64_t(r) * kAttnThreads;
                if (i < Dv) ob[r] = __fadd_rn(ob[r], __fmul_rn(pk, cudaq::deq_elem(a.vt, vrow, hk * Dv + i)));
            }
        }
        if (a.partials) {
            float* row = attn_partial(a, h, y, b - b_first);
            if (tid == 0) row[0] = mb, row[1] = lb;
            for (int r = 0; r < KOUT; ++r) {
                const int64_t i = tid + int64_t(r) * kAttnThreads;
                if (i < Dv) row[2 + i] = ob[r];
            }
        } else if (b == b_first) {
            m = mb, l = lb;
            for (int r = 0; r < KOUT; ++r) o[r] = ob[r];
        } else {
            attn_fold(m, l, o, mb, lb, ob, KOUT);  // outputs past Dv stay 0 and are not stored
        }
    }
    if (a.partials) return;
    if (a.sinks) attn_fold_sink(m, l, o, a.sinks[h], KOUT);  // outputs past Dv stay 0
    float* po = attn_out(a, h, t);
    for (int r = 0; r < KOUT; ++r) {
        const int64_t i = tid + int64_t(r) * kAttnThreads;
        if (i < Dv) po[i] = canon_div(o[r], l);
    }
}

// After a split attention_kernel: the partials of (head h, launch query y) folded in block
// order, then out = o / l. Grid: (head, query); every thread runs the (m, l) chain itself.
template <int KOUT>
__global__ void __launch_bounds__(kAttnThreads) attention_fold_kernel(AttnArgs a) {
    const int64_t h = blockIdx.x, y = blockIdx.y, t = a.t0 + y, Dv = a.Dv;
    const int64_t pt = a.pos[t], k0 = attn_first_of(a.pos, t, a.n_q, a.W), nb = attn_block_of(pt) - attn_block_of(k0) + 1;
    const int tid = threadIdx.x;
    const float* first = attn_partial(a, h, y, 0);
    float m = first[0], l = first[1], o[KOUT], ob[KOUT];
    for (int r = 0; r < KOUT; ++r) {
        const int64_t i = tid + int64_t(r) * kAttnThreads;
        o[r] = i < Dv ? first[2 + i] : 0.0f;
    }
    for (int64_t jb = 1; jb < nb; ++jb) {
        const float* row = attn_partial(a, h, y, jb);
        for (int r = 0; r < KOUT; ++r) {
            const int64_t i = tid + int64_t(r) * kAttnThreads;
            ob[r] = i < Dv ? row[2 + i] : 0.0f;
        }
        attn_fold(m, l, o, row[0], row[1], ob, KOUT);
    }
    if (a.sinks) attn_fold_sink(m, l, o, a.sinks[h], KOUT);
    float* po = attn_out(a, h, t);
    for (int r = 0; r < KOUT; ++r) {
        const int64_t i = tid + int64_t(r) * kAttnThreads;
        if (i < Dv) po[i] = canon_div(o[r], l);
    }
}

// ---- attention in tiles: the kernels used wherever a key block's head slices fit
// A tile is `rows` (head, query) pairs that read the same keys: gq heads of one KV group
// (grouped-query attention) times tq queries of one sequence. A CUDA block stages each key
// block's K rows, then its V rows, once for the whole tile (coalesced 16-, 4- or 2-byte
// copies into shared memory, rows padded to an odd number of words so that threads reading
// one element of different rows hit different banks), then:
//  1. every (row, key) score by one thread: canon_dot's 32 lane partials and its fixed tree
//     computed in registers (the same additions warp_canon_sum makes across a warp);
//  2. m_b per row, p_k per (row, key);
//  3. l_b per row and o_b[i] per (row, output i) by one thread each, in key order;
// then, unsplit, the fold into the row's state in block order; split (decode: few tiles over
// a long context), each key block's partial goes to the scratch buffer and
// attention_fold_chunks_kernel folds them. Each (row, key block) partial is the reference's,
// whichever tile or split computed it.
constexpr int kTileThreads = 256;
constexpr int kTileRowsMax = 16;
constexpr int kTilePairsMax = 8;                   // (row, output) pairs a thread owns at most
constexpr int64_t kTileRowFloats = 2048;           // rows * Dk and rows * Dv at most
constexpr int64_t kTileStageBytes = kAttnBlock * 516;  // a key block of 256-wide f16 head slices

// The tile geometry of one attention node, chosen on the host (attention.cu, and the tests
// that launch the kernels on the emulator). ok is false where a key block's slices do not fit
// (wide heads, f32 caches of heads over 128) or a head splits a cache block: the per-query
// kernels above take those.
// No padding (AttnArgs says why).
struct TileGeom {
    int64_t kb = 0, vb = 0, ks = 0, vs = 0;   // slice bytes and padded stride of K and V rows
    int gq = 1, tq = 1, rows = 1, pairs = 1;  // pairs: per thread, a power of two
    int kw = 2, vw = 2;                       // copy unit (bytes) of K and V rows
    bool ok = false;
    bool f16 = false;                         // both caches F16 (the kernels' direct reads)
    bool unused[6] = {};
};
static_assert(std::has_unique_object_representations_v<TileGeom>, "TileGeom has no padding bytes");
inline int64_t tile_stride(int64_t bytes) {  // an odd number of 4-byte words
    const int64_t w = (bytes + 3) / 4;
    return 4 * (w | 1);
}
inline int tile_copy_unit(int64_t bytes, int64_t nb1) { return bytes % 16 == 0 && nb1 % 16 == 0 ? 16 : bytes % 4 == 0 && nb1 % 4 == 0 ? 4 : 2; }
// one_seq: every query of the launch is of one sequence (then a tile takes several queries).
inline TileGeom plan_tiles(int64_t Dk, int64_t Dv, int64_t group, DType kt, int64_t k_nb1, DType vt, int64_t v_nb1, bool one_seq) {
    TileGeom g;
    auto known = [](DType t) { return t == DType::F32 || t == DType::F16 || t == DType::BF16 || t == DType::Q8_0 || t == DType::Q4_0; };
    if (!known(kt) || !known(vt) || Dk % block_size(kt) || Dv % block_size(vt)) return g;  // tile_elem's types
    g.kb = int64_t(row_bytes(kt, Dk)), g.vb = int64_t(row_bytes(vt, Dv));
    g.ks = tile_stride(g.kb), g.vs = tile_stride(g.vb);
    const int64_t widest = Dk > Dv ? Dk : Dv;
    const int64_t rmax = std::min<int64_t>(kTileRowsMax, kTileRowFloats / widest);
    if (rmax < 1 || kAttnBlock * g.ks > kTileStageBytes || kAttnBlock * g.vs > kTileStageBytes) return g;
    g.gq = 1;
    for (int64_t d = 1; d <= rmax; ++d)
        if (group % d == 0) g.gq = int(d);
    g.tq = one_seq ? int(rmax / g.gq) : 1;
    g.rows = g.gq * g.tq;
    const int64_t need = (g.rows * Dv + kTileThreads - 1) / kTileThreads;
    g.pairs = 1;
    while (g.pairs < need) g.pairs *= 2;
    g.kw = tile_copy_unit(g.kb, k_nb1), g.vw = tile_copy_unit(g.vb, v_nb1);
    g.f16 = kt == DType::F16 && vt == DType::F16;
    g.ok = g.pairs <= kTilePairsMax;
    return g;
}

// Key blocks from the first a tile's rows see to the last any sees, over the tiles of tq
// queries of pos[0..T): how many key blocks the widest tile walks (what its splits divide).
inline int64_t tile_key_span(const int32_t* pos, int64_t T, int64_t tq, int32_t W) {
    int64_t span = 1;
    for (int64_t t0 = 0; t0 < T; t0 += tq) {
        int64_t bmin = INT64_MAX, bmax = 0;
        for (int64_t t = t0; t < std::min(T, t0 + tq); ++t) {
            bmin = std::min(bmin, attn_block_of(attn_first_of(pos, t, T, W)));
            bmax = std::max(bmax, attn_block_of(pos[t]));
        }
        span = std::max(span, bmax - bmin + 1);
    }
    return span;
}

// Element i of a staged head slice: F16 read directly; the other cache types (cache_type in
// support_predicates.h) through deq_elem with the type a constant, so that each case is only
// its own few instructions (deq_elem's switch over every weight type, inlined into the
// unrolled score loop, made the kernels megabytes).
template <bool F16> __device__ inline float tile_elem(DType t, const uint8_t* row, int64_t i) {
    if constexpr (F16) {
        return cudaq::h2f(cudaq::ldh(row + 2 * i));
    } else {
        switch (t) {
            case DType::F32: return cudaq::deq_elem(DType::F32, row, i);
            case DType::BF16: return cudaq::deq_elem(DType::BF16, row, i);
            case DType::Q8_0: return cudaq::deq_elem(DType::Q8_0, row, i);
            case DType::Q4_0: return cudaq::deq_elem(DType::Q4_0, row, i);
            default: return cudaq::deq_elem(DType::F16, row, i);
        }
    }
}

struct alignas(16) TileF4 {
    float x, y, z, w;
};

// canon_dot(q, k) * scale (soft-capped when asked) by one thread: lane partial l adds the
// terms i = l, l + 32, ... from +0, then the tree p[l] += p[l + w], w = 16..1 (warp_canon_tree).
template <bool F16> __device__ inline float tile_score(const float* q, DType kt, const uint8_t* krow, int64_t Dk, float scale, float softcap) {
    float p[kCanonLanes];
LS_UNROLL
    for (int l = 0; l < kCanonLanes; ++l) p[l] = 0.0f;
    if (F16 && Dk % 4 == 0) {
        // Four query values a 16-byte load and two keys' halves a 4-byte one (q is 16-byte
        // aligned, staged rows 4-byte): the same products, a third of the loads.
        for (int64_t c = 0; c < Dk; c += kCanonLanes) {
LS_UNROLL
            for (int l = 0; l < kCanonLanes; l += 4) {
                if (c + l >= Dk) continue;
                const TileF4 qv = *reinterpret_cast<const TileF4*>(q + c + l);
                const uint32_t k01 = *reinterpret_cast<const uint32_t*>(krow + 2 * (c + l));
                const uint32_t k23 = *reinterpret_cast<const uint32_t*>(krow + 2 * (c + l + 2));
                p[l] = __fadd_rn(p[l], __fmul_rn(qv.x, cudaq::h2f(uint16_t(k01 & 0xFFFFu))));
                p[l + 1] = __fadd_rn(p[l + 1], __fmul_rn(qv.y, cudaq::h2f(uint16_t(k01 >> 16))));
                p[l + 2] = __fadd_rn(p[l + 2], __fmul_rn(qv.z, cudaq::h2f(uint16_t(k23 & 0xFFFFu))));
                p[l + 3] = __fadd_rn(p[l + 3], __fmul_rn(qv.w, cudaq::h2f(uint16_t(k23 >> 16))));
            }
        }
    } else {
        for (int64_t c = 0; c < Dk; c += kCanonLanes) {
LS_UNROLL
            for (int l = 0; l < kCanonLanes; ++l)
                if (c + l < Dk) p[l] = __fadd_rn(p[l], __fmul_rn(q[c + l], tile_elem<F16>(kt, krow, c + l)));
        }
    }
    static_assert(kCanonLanes == 32, "the tree below is warp_canon_tree's for 32 partials");
LS_UNROLL
    for (int l = 0; l < 16; ++l) p[l] = __fadd_rn(p[l], p[l + 16]);
LS_UNROLL
    for (int l = 0; l < 8; ++l) p[l] = __fadd_rn(p[l], p[l + 8]);
LS_UNROLL
    for (int l = 0; l < 4; ++l) p[l] = __fadd_rn(p[l], p[l + 4]);
LS_UNROLL
    for (int l = 0; l < 2; ++l) p[l] = __fadd_rn(p[l], p[l + 2]);
    p[0] = __fadd_rn(p[0], p[1]);
    float x = __fmul_rn(p[0], scale);
    if (softcap > 0) x = __fmul_rn(softcap, det_tanh(canon_div(x, softcap)));
    return x;
}

// Copies the head-hk slices (hb bytes at hk * hb, in units of u bytes) of the cache rows of
// keys lo..lo+n-1 of sequence slot s into dst, rows `stride` bytes apart. A thread reads
// kStageAhead units before it stores any (the compiler cannot move a load past a store that
// may alias it, and each load would wait for the one before); the keys' ring rows follow
// from lo's (one 64-bit remainder a call, not one a unit).
struct alignas(16) TileU4 {
    uint32_t x, y, z, w;
};
constexpr int kStageAhead = 4;
__device__ inline void tile_stage(uint8_t* dst, const uint8_t* cache, int64_t nb1, int64_t hb, int64_t stride, int u, int64_t s,
                                  int64_t hk, int64_t lo, int n, int64_t R) {
    const int units = int(hb / u), total = n * units;
    const int64_t r0 = lo % R;
    const uint8_t* base = cache + s * R * nb1 + hk * hb;
    for (int w0 = int(threadIdx.x); w0 < total; w0 += kTileThreads * kStageAhead) {
        TileU4 v[kStageAhead];
LS_UNROLL
        for (int i = 0; i < kStageAhead; ++i) {
            const int w = w0 + i * kTileThreads;
            if (w >= total) continue;
            const int j = w / units, c = w % units;
            int64_t row = r0 + j;  // (lo + j) % R; j < kAttnBlock, so one subtraction unless R is shorter
            if (row >= R) row = R >= kAttnBlock ? row - R : row % R;
            const uint8_t* src = base + row * nb1 + c * u;
            if (u == 16) v[i] = *reinterpret_cast<const TileU4*>(src);
            else if (u == 4) v[i].x = *reinterpret_cast<const uint32_t*>(src);
            else v[i].x = *reinterpret_cast<const uint16_t*>(src);
        }
LS_UNROLL
        for (int i = 0; i < kStageAhead; ++i) {
            const int w = w0 + i * kTileThreads;
            if (w >= total) continue;
            const int j = w / units, c = w % units;
            uint8_t* d = dst + j * stride + c * u;
            if (u == 16) {
                uint32_t* d4 = reinterpret_cast<uint32_t*>(d);
                d4[0] = v[i].x, d4[1] = v[i].y, d4[2] = v[i].z, d4[3] = v[i].w;
            } else if (u == 4) {
                *reinterpret_cast<uint32_t*>(d) = v[i].x;
            } else {
                *reinterpret_cast<uint16_t*>(d) = uint16_t(v[i].x);
            }
        }
    }
}

// Grid: (head group x, query tile y, split z) over the launch's n_q queries. Tile row r is
// head x * gq + r % gq and launch query y * tq + r / gq. P: (row, output) pairs per thread;
// F16: g.f16.
template <int P, bool F16>
__global__ void __launch_bounds__(kTileThreads) attention_tile_kernel(AttnArgs a, TileGeom g, int64_t n_q) {
    alignas(16) __shared__ float qs[kTileRowFloats];
    __shared__ float ps[kTileRowsMax][kAttnBlock];
    __shared__ float mbs[kTileRowsMax], fa[kTileRowsMax], fc[kTileRowsMax], ms[kTileRowsMax], ls[kTileRowsMax];
    __shared__ int64_t rpos[kTileRowsMax], rk0[kTileRowsMax];
    alignas(16) __shared__ uint8_t stage[kTileStageBytes];
    const int tid = threadIdx.x;
    const int64_t Dk = a.sq.ne[0], Dv = a.Dv;
    const int64_t h0 = int64_t(blockIdx.x) * g.gq, hk = h0 / a.group, y0 = int64_t(blockIdx.y) * g.tq;
    const int nqt = int(n_q - y0 < g.tq ? n_q - y0 : g.tq), nr = g.gq * nqt;
    const int64_t s = a.seq[a.t0 + y0];  // one sequence per tile (plan_tiles)
    if (tid < nr) {
        const int64_t tq = a.t0 + y0 + tid / g.gq, p = a.pos[tq];
        rpos[tid] = p, rk0[tid] = attn_first_of(a.pos, tq, a.n_q, a.W);
    }
    for (int64_t e = tid; e < int64_t(nr) * Dk; e += kTileThreads) {
        const int64_t r = e / Dk, i = e % Dk;
        const uint8_t* qrow = reinterpret_cast<const uint8_t*>(a.q) + (h0 + r % g.gq) * a.sq.nb[1] + (a.t0 + y0 + r / g.gq) * a.sq.nb[2];
        qs[e] = reinterpret_cast<const float*>(qrow)[i];
    }
    __syncthreads();
    int64_t kmin = rk0[0], pmax = rpos[0];
    for (int r = 1; r < nr; ++r) {
        kmin = rk0[r] < kmin ? rk0[r] : kmin;
        pmax = rpos[r] > pmax ? rpos[r] : pmax;
    }
    const int64_t b_last = attn_block_of(pmax), b0 = attn_block_of(kmin) + int64_t(blockIdx.z) * a.blocks_per_split;
    const int64_t b1 = b0 + a.blocks_per_split - 1 < b_last ? b0 + a.blocks_per_split - 1 : b_last;
    if (b0 > b_last) return;  // the whole block: this tile has fewer key blocks
    // Row r's visible keys among key block b's lo..hi: vlo..vhi (none where vlo > vhi).
    auto visible = [&](int r, int64_t lo, int64_t hi, int64_t& vlo, int64_t& vhi) {
        vlo = rk0[r] > lo ? rk0[r] : lo, vhi = rpos[r] < hi ? rpos[r] : hi;
    };
    float o[P], ob[P];
    int pr[P], pi[P];  // the thread's pairs: row, output (pr -1: none)
LS_UNROLL
    for (int u = 0; u < P; ++u) {
        const int e = tid + u * kTileThreads;
        o[u] = 0;
        pr[u] = e < nr * int(Dv) ? e / int(Dv) : -1, pi[u] = e % int(Dv);
    }
    for (int64_t b = b0; b <= b1; ++b) {
        const int64_t lo = kmin > b * kAttnBlock ? kmin : b * kAttnBlock;
        const int64_t hi = pmax < b * kAttnBlock + kAttnBlock - 1 ? pmax : b * kAttnBlock + kAttnBlock - 1;
        const int n = int(hi - lo + 1);
        __syncthreads();  // the previous block's values have been read
        tile_stage(stage, a.kc, a.k_nb1, g.kb, g.ks, g.kw, s, hk, lo, n, a.R);
        __syncthreads();
        // 1. scores of the visible (row, key) pairs.
        for (int e = tid; e < nr * kAttnBlock; e += kTileThreads) {
            const int r = e / kAttnBlock, j = e % kAttnBlock;
            if (j >= n || lo + j < rk0[r] || lo + j > rpos[r]) continue;
            ps[r][j] = tile_score<F16>(qs + r * Dk, a.kt, stage + j * g.ks, Dk, a.scale, a.softcap);
        }
        __syncthreads();
        // 2. m_b per row, a warp a row (a maximum: exact in any order), then p_k.
        for (int r = tid / 32; r < nr; r += kTileThreads / 32) {
            int64_t vlo, vhi;
            visible(r, lo, hi, vlo, vhi);
            float mb = -INFINITY;
            for (int64_t k = vlo + tid % 32; k <= vhi; k += 32) mb = fmaxf(mb, ps[r][k - lo]);
            mb = warp_max(mb);
            if (tid % 32 == 0) mbs[r] = mb;
        }
        __syncthreads();  // the scores are read; the stage takes the values
        for (int e = tid; e < nr * kAttnBlock; e += kTileThreads) {
            const int r = e / kAttnBlock, j = e % kAttnBlock;
            if (j < n && lo + j >= rk0[r] && lo + j <= rpos[r]) ps[r][j] = det_exp(__fsub_rn(ps[r][j], mbs[r]));
        }
        tile_stage(stage, a.vc, a.v_nb1, g.vb, g.vs, g.vw, s, hk, lo, n, a.R);
        __syncthreads();
        // 3. l_b per row, then the row's fold factors (or its partial's head).
        if (tid < nr) {
            int64_t vlo, vhi;
            visible(tid, lo, hi, vlo, vhi);
            if (vlo <= vhi) {
                float lb = 0;  // in key order; eight read before they are added
                int64_t k = vlo;
                for (; k + 7 <= vhi; k += 8) {
                    float t[8];
LS_UNROLL
                    for (int d = 0; d < 8; ++d) t[d] = ps[tid][k + d - lo];
LS_UNROLL
                    for (int d = 0; d < 8; ++d) lb = __fadd_rn(lb, t[d]);
                }
                for (; k <= vhi; ++k) lb = __fadd_rn(lb, ps[tid][k - lo]);
                const float mb = mbs[tid];
                if (a.partials) {
                    float* row = attn_partial(a, h0 + tid % g.gq, y0 + tid / g.gq, b - attn_block_of(rk0[tid]));
                    row[0] = mb, row[1] = lb;
                } else if (b == attn_block_of(rk0[tid])) {
                    ms[tid] = mb, ls[tid] = lb;
                } else {
                    const float m = ms[tid], mn = detp::fmax(m, mb);
                    const float fa_ = det_exp(m - mn), fc_ = det_exp(mb - mn);
                    ls[tid] = ls[tid] * fa_ + lb * fc_;
                    ms[tid] = mn, fa[tid] = fa_, fc[tid] = fc_;
                }
            }
        }
        // ... and o_b per (row, output) in key order.
LS_UNROLL
        for (int u = 0; u < P; ++u) {
            ob[u] = 0;
            const int r = pr[u], i = pi[u];
            if (r < 0) continue;
            int64_t vlo, vhi;
            visible(r, lo, hi, vlo, vhi);
            float acc = 0;
            // Eight products are formed before they are added (the same chain), so that their
            // loads overlap.
            int64_t k = vlo;
            for (; k + 7 <= vhi; k += 8) {
                float t[8];
LS_UNROLL
                for (int d = 0; d < 8; ++d) t[d] = __fmul_rn(ps[r][k + d - lo], tile_elem<F16>(a.vt, stage + (k + d - lo) * g.vs, i));
LS_UNROLL
                for (int d = 0; d < 8; ++d) acc = __fadd_rn(acc, t[d]);
            }
            for (; k <= vhi; ++k) acc = __fadd_rn(acc, __fmul_rn(ps[r][k - lo], tile_elem<F16>(a.vt, stage + (k - lo) * g.vs, i)));
            ob[u] = acc;
        }
        if (a.partials) {
LS_UNROLL
            for (int u = 0; u < P; ++u) {
                const int r = pr[u];
                if (r < 0) continue;
                int64_t vlo, vhi;
            visible(r, lo, hi, vlo, vhi);
                if (vlo <= vhi) attn_partial(a, h0 + r % g.gq, y0 + r / g.gq, b - attn_block_of(rk0[r]))[2 + pi[u]] = ob[u];
            }
            continue;
        }
        __syncthreads();  // the rows' fold factors
LS_UNROLL
        for (int u = 0; u < P; ++u) {
            const int r = pr[u];
            if (r < 0) continue;
            int64_t vlo, vhi;
            visible(r, lo, hi, vlo, vhi);
            if (vlo > vhi) continue;
            o[u] = b == attn_block_of(rk0[r]) ? ob[u] : o[u] * fa[r] + ob[u] * fc[r];
        }
    }
    if (a.partials) return;
    __syncthreads();
    if (tid < nr && a.sinks) {  // attn_fold_sink's arithmetic, its factor for the outputs
        const float sk = a.sinks[h0 + tid % g.gq], m = ms[tid], mn = detp::fmax(m, sk);
        const float fa_ = det_exp(m - mn), fc_ = det_exp(sk - mn);
        ls[tid] = ls[tid] * fa_ + fc_;
        fa[tid] = fa_;
    }
    __syncthreads();
LS_UNROLL
    for (int u = 0; u < P; ++u) {
        const int r = pr[u];
        if (r < 0) continue;
        const float ov = a.sinks ? o[u] * fa[r] : o[u];
        attn_out(a, h0 + r % g.gq, a.t0 + y0 + r / g.gq)[pi[u]] = canon_div(ov, ls[r]);
    }
}

// After a split attention_tile_kernel: the partials of (head h, launch query y) folded in
// block order, 256 key blocks at a time. attn_fold's running maximum is a chain of maxima, so
// one thread runs it ahead; the factors a = det_exp(m - m'), c = det_exp(m_b - m') of every
// block are then computed at once, and the l and o chains (l * a + l_b * c, as attn_fold
// computes them) are the only sequential work left. Grid: (head, query).
constexpr int kFoldChunk = kTileThreads;
// chunk: key blocks per round, at most kFoldChunk (the tests take fewer, to cross rounds).
template <int KOUT>
__global__ void __launch_bounds__(kTileThreads) attention_fold_chunks_kernel(AttnArgs a, int chunk) {
    __shared__ float mbs[kFoldChunk], lbs[kFoldChunk], mprev[kFoldChunk], mnew[kFoldChunk], fa[kFoldChunk], fc[kFoldChunk];
    __shared__ float m_run, l_run;
    const int64_t h = blockIdx.x, y = blockIdx.y, t = a.t0 + y, Dv = a.Dv;
    const int64_t pt = a.pos[t], nb = attn_block_of(pt) - attn_block_of(attn_first_of(a.pos, t, a.n_q, a.W)) + 1;
    const int tid = threadIdx.x;
    float o[KOUT];
LS_UNROLL
    for (int r = 0; r < KOUT; ++r) o[r] = 0;
    for (int64_t c0 = 0; c0 < nb; c0 += chunk) {
        const int n = int(nb - c0 < chunk ? nb - c0 : chunk);
        if (tid < n) {
            const float* row = attn_partial(a, h, y, c0 + tid);
            mbs[tid] = row[0], lbs[tid] = row[1];
        }
        __syncthreads();
        if (tid == 0) {  // the running maximum, before and after each block
            float m = c0 == 0 ? mbs[0] : m_run;
            for (int j = c0 == 0 ? 1 : 0; j < n; ++j) {
                mprev[j] = m;
                m = detp::fmax(m, mbs[j]);
                mnew[j] = m;
            }
            m_run = m;
        }
        __syncthreads();
        if (tid < n && c0 + tid > 0) fa[tid] = det_exp(mprev[tid] - mnew[tid]), fc[tid] = det_exp(mbs[tid] - mnew[tid]);
        __syncthreads();
        if (tid == 0) {
            float l = c0 == 0 ? lbs[0] : l_run;
            for (int j = c0 == 0 ? 1 : 0; j < n; ++j) l = l * fa[j] + lbs[j] * fc[j];
            l_run = l;
        }
LS_UNROLL
        for (int r = 0; r < KOUT; ++r) {
            const int64_t i = tid + int64_t(r) * kTileThreads;
            if (i >= Dv) continue;
            float acc = o[r];
            int j = 0;
            if (c0 == 0) acc = attn_partial(a, h, y, 0)[2 + i], j = 1;
            // Sixteen partials are read before they are folded (the same chain): the loads overlap.
            for (; j + 15 < n; j += 16) {
                float v[16];
LS_UNROLL
                for (int d = 0; d < 16; ++d) v[d] = attn_partial(a, h, y, c0 + j + d)[2 + i];
LS_UNROLL
                for (int d = 0; d < 16; ++d) acc = acc * fa[j + d] + v[d] * fc[j + d];
            }
            for (; j < n; ++j) acc = acc * fa[j] + attn_partial(a, h, y, c0 + j)[2 + i] * fc[j];
            o[r] = acc;
        }
        __syncthreads();  // the chunk's arrays are read
    }
    if (tid == 0 && a.sinks) {
        const float sk = a.sinks[h], m = m_run, mn = detp::fmax(m, sk);
        const float fa_ = det_exp(m - mn), fc_ = det_exp(sk - mn);
        l_run = l_run * fa_ + fc_;
        fa[0] = fa_;
    }
    __syncthreads();
    float* po = attn_out(a, h, t);
LS_UNROLL
    for (int r = 0; r < KOUT; ++r) {
        const int64_t i = tid + int64_t(r) * kTileThreads;
        if (i < Dv) po[i] = canon_div(a.sinks ? o[r] * fa[0] : o[r], l_run);
    }
}

// Calls f(std::integral_constant<int, N>{}) with N the power of two 1..8 that n rounds up to.
template <class F> void with_pow2(int64_t n, F&& f) {
    if (n <= 1) f(std::integral_constant<int, 1>{});
    else if (n <= 2) f(std::integral_constant<int, 2>{});
    else if (n <= 4) f(std::integral_constant<int, 4>{});
    else f(std::integral_constant<int, 8>{});
}

// Calls f(std::integral_constant<int, KOUT>{}) with the KOUT the per-query kernels take for
// value heads of Dv; false when Dv exceeds kAttnMaxHead.
template <class F> bool with_attn_outputs(int64_t Dv, F&& f) {
    if (Dv > kAttnMaxHead) return false;
    with_pow2((Dv + kAttnThreads - 1) / kAttnThreads, f);
    return true;
}
static_assert(8 * kAttnThreads == kAttnMaxHead, "with_attn_outputs covers every value head up to kAttnMaxHead");

}  // namespace
}  // namespace ls::cuda
