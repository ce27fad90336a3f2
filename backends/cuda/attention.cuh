// The attention kernels (launched by attention.cu). A header so that tests/backends/test_cuda_emu.cpp
// can run them on the host, bit for bit against ref::attention, without a GPU.
//
// They compute SEMANTICS.md section 1 with the arithmetic of core/rules/attention_rule.h, as
// ref::attention does: query (s, p) reads keys attn_first_key(p, W)..p of slot s, key k at
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
struct AttnArgs {
    const float* q;
    Shape sq;
    const uint8_t* kc;
    DType kt;
    int64_t k_nb1;
    const uint8_t* vc;
    DType vt;
    int64_t v_nb1;
    const int32_t *pos, *seq;  // per query (device)
    int64_t t0;                // the launch's first query
    int32_t W;
    int64_t R, group;
    float scale, softcap;
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
};

// The outputs of (head h, launch query y), and the partial row jb of that pair.
__device__ inline float* attn_out(const AttnArgs& a, int64_t h, int64_t t) {
    return reinterpret_cast<float*>(a.out + h * a.so.nb[1] + t * a.so.nb[2]);
}
__device__ inline float* attn_partial(const AttnArgs& a, int64_t h, int64_t y, int64_t jb) {
    return a.partials + ((y * int64_t(gridDim.x) + h) * a.nb_max + jb) * (a.Dv + 2);
}

// KOUT outputs per thread: the smallest of 1, 2, 4, 8 with KOUT * kAttnThreads >= Dv.
template <int KOUT>
__global__ void __launch_bounds__(kAttnThreads) attention_kernel(AttnArgs a) {
    __shared__ float qs[kAttnMaxHead];
    __shared__ float ps[kAttnBlock];  // the block's scores, then its p_k
    const int64_t h = blockIdx.x, y = blockIdx.y, t = a.t0 + y, Dk = a.sq.ne[0], Dv = a.Dv, hk = h / a.group;
    const int64_t s = a.seq[t], pt = a.pos[t], k0 = attn_first_key(pt, a.W);
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
    const int64_t pt = a.pos[t], k0 = attn_first_key(pt, a.W), nb = attn_block_of(pt) - attn_block_of(k0) + 1;
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

// ---- prompt attention in query tiles (LOCKSTEP_CUDA_ATTN_TILES=1 until a GPU has timed it)
// A CUDA block takes kTileQ queries of one sequence and one head, and walks the key blocks
// any of them sees: each key block's rows (the head's slice, in the cache's own type) are
// copied into shared memory once for the tile, not once per query. Per query the arithmetic
// is attention_kernel's: scores a warp each (warp_canon_sum), m_b, p_k, then l_b and o_b
// chains in key order over that query's visible keys of the block, folded in block order.
constexpr int kTileQ = 8;
constexpr int64_t kTileMaxHead = 256;             // Dk and Dv (KOUT at most 2)
constexpr int64_t kTileRowsBytes = 32 * 1024;     // a key block's K (then V) head slices

// Grid: (head h, tile y); the tile's queries are the launch's t0 + y * kTileQ + i, i < kTileQ,
// below t0 + n_q. kb / vb: bytes of one head's slice of a K / V row (whole blocks).
template <int KOUT>
__global__ void __launch_bounds__(kAttnThreads) attention_tile_kernel(AttnArgs a, int64_t n_q, int64_t kb, int64_t vb) {
    __shared__ float qs[kTileQ][kTileMaxHead];
    __shared__ float ps[kTileQ][kAttnBlock];
    __shared__ float mbs[kTileQ];
    __shared__ int64_t qpos[kTileQ], qk0[kTileQ];
    alignas(16) __shared__ uint16_t rows[kTileRowsBytes / 2];
    const int64_t h = blockIdx.x, y0 = int64_t(blockIdx.y) * kTileQ, Dk = a.sq.ne[0], Dv = a.Dv, hk = h / a.group;
    const int nq = int(n_q - y0 < kTileQ ? n_q - y0 : kTileQ);
    const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32;
    const int64_t s = a.seq[a.t0 + y0];  // one sequence (the launcher checks)
    if (tid < kTileQ) {
        const int64_t p = tid < nq ? a.pos[a.t0 + y0 + tid] : -1;
        qpos[tid] = p;
        qk0[tid] = tid < nq ? attn_first_key(p, a.W) : 0;
    }
    for (int64_t e = tid; e < int64_t(nq) * Dk; e += kAttnThreads) {
        const int64_t qi = e / Dk, i = e % Dk;
        qs[qi][i] = reinterpret_cast<const float*>(reinterpret_cast<const uint8_t*>(a.q) + h * a.sq.nb[1] + (a.t0 + y0 + qi) * a.sq.nb[2])[i];
    }
    __syncthreads();
    int64_t kmin = qk0[0], pmax = qpos[0];
    for (int qi = 1; qi < nq; ++qi) {
        kmin = qk0[qi] < kmin ? qk0[qi] : kmin;
        pmax = qpos[qi] > pmax ? qpos[qi] : pmax;
    }
    float m[kTileQ], l[kTileQ], o[kTileQ][KOUT], ob[KOUT];
    for (int qi = 0; qi < kTileQ; ++qi) {
        m[qi] = 0, l[qi] = 0;
        for (int r = 0; r < KOUT; ++r) o[qi][r] = 0;
    }
    const uint8_t* krows = reinterpret_cast<const uint8_t*>(rows);
    // Copies the head slices (bytes `hb` from offset hk * hb) of keys lo..lo+n-1 into rows.
    auto stage = [&](const uint8_t* cache, int64_t nb1, int64_t hb, int64_t lo, int n) {
        const int64_t words = hb / 2;
        for (int64_t w = tid; w < int64_t(n) * words; w += kAttnThreads) {
            const int64_t j = w / words, o16 = w % words;
            rows[j * words + o16] = reinterpret_cast<const uint16_t*>(cache + ring_row(s, lo + j, a.R) * nb1 + hk * hb)[o16];
        }
    };
    for (int64_t b = attn_block_of(kmin); b <= attn_block_of(pmax); ++b) {
        const int64_t lo = kmin > b * kAttnBlock ? kmin : b * kAttnBlock;
        const int64_t hi = pmax < b * kAttnBlock + kAttnBlock - 1 ? pmax : b * kAttnBlock + kAttnBlock - 1;
        const int n = int(hi - lo + 1);
        __syncthreads();  // the previous block's values have been read
        stage(a.kc, a.k_nb1, kb, lo, n);
        __syncthreads();
        // 1. the scores of every (query, visible key) pair, a warp each.
        for (int pr = warp; pr < nq * n; pr += kAttnWarps) {
            const int qi = pr / n, j = pr % n;
            const int64_t k = lo + j;
            if (k < qk0[qi] || k > qpos[qi]) continue;  // the whole warp
            const uint8_t* krow = krows + j * kb;
            const float d = warp_canon_sum(Dk, lane, [&](int64_t i) { return __fmul_rn(qs[qi][i], cudaq::deq_elem(a.kt, krow, i)); });
            float x = __fmul_rn(d, a.scale);
            if (a.softcap > 0) x = __fmul_rn(a.softcap, det_tanh(canon_div(x, a.softcap)));
            if (lane == 0) ps[qi][j] = x;
        }
        __syncthreads();
        // 2. m_b per query in key order, then its p_k.
        if (tid < nq) {
            float mb = -INFINITY;
            for (int j = 0; j < n; ++j)
                if (lo + j >= qk0[tid] && lo + j <= qpos[tid]) mb = fmaxf(mb, ps[tid][j]);
            mbs[tid] = mb;
        }
        __syncthreads();
        for (int pr = tid; pr < nq * n; pr += kAttnThreads) {
            const int qi = pr / n, j = pr % n;
            if (lo + j >= qk0[qi] && lo + j <= qpos[qi]) ps[qi][j] = det_exp(__fsub_rn(ps[qi][j], mbs[qi]));
        }
        stage(a.vc, a.v_nb1, vb, lo, n);  // the keys' rows are no longer read
        __syncthreads();
        // 3. per query with keys in this block: l_b and o_b in key order, then the fold.
        for (int qi = 0; qi < nq; ++qi) {
            const int64_t vlo = qk0[qi] > lo ? qk0[qi] : lo, vhi = qpos[qi] < hi ? qpos[qi] : hi;
            if (vlo > vhi) continue;
            float lb = 0;
            for (int r = 0; r < KOUT; ++r) ob[r] = 0;
            for (int64_t k = vlo; k <= vhi; ++k) {
                const float pk = ps[qi][k - lo];
                lb = __fadd_rn(lb, pk);
                const uint8_t* vrow = krows + (k - lo) * vb;
                for (int r = 0; r < KOUT; ++r) {
                    const int64_t i = tid + int64_t(r) * kAttnThreads;
                    if (i < Dv) ob[r] = __fadd_rn(ob[r], __fmul_rn(pk, cudaq::deq_elem(a.vt, vrow, i)));
                }
            }
            if (b == attn_block_of(qk0[qi])) {
                m[qi] = mbs[qi], l[qi] = lb;
                for (int r = 0; r < KOUT; ++r) o[qi][r] = ob[r];
            } else {
                attn_fold(m[qi], l[qi], o[qi], mbs[qi], lb, ob, KOUT);
            }
        }
    }
    for (int qi = 0; qi < nq; ++qi) {
        if (a.sinks) attn_fold_sink(m[qi], l[qi], o[qi], a.sinks[h], KOUT);
        float* po = attn_out(a, h, a.t0 + y0 + qi);
        for (int r = 0; r < KOUT; ++r) {
            const int64_t i = tid + int64_t(r) * kAttnThreads;
            if (i < Dv) po[i] = canon_div(o[qi][r], l[qi]);
        }
    }
}

// Calls f(std::integral_constant<int, KOUT>{}) with the KOUT the kernels take for value
// heads of Dv; false when Dv exceeds kAttnMaxHead.
template <class F> bool with_attn_outputs(int64_t Dv, F&& f) {
    if (Dv <= kAttnThreads) f(std::integral_constant<int, 1>{});
    else if (Dv <= 2 * kAttnThreads) f(std::integral_constant<int, 2>{});
    else if (Dv <= 4 * kAttnThreads) f(std::integral_constant<int, 4>{});
    else if (Dv <= 8 * kAttnThreads) f(std::integral_constant<int, 8>{});
    else return false;
    return true;
}
static_assert(8 * kAttnThreads == kAttnMaxHead, "with_attn_outputs covers every value head up to kAttnMaxHead");

}  // namespace
}  // namespace ls::cuda
