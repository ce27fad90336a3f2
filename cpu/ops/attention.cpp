// attention on the CPU: the canonical block attention of core/ref/attention.cpp
// (core/rules/attention_rule.h), vectorized, read from the cache rows in their stored type.
//
// Per query and key block (64 absolute positions): scores are canon_dot in 32 float lanes
// (four 8-float registers, simd.h's tree), the block's max, det_exp of the shifted scores
// (vectorized over keys), l_b summed in key order, and o_b[i] = o_b[i] + p_k * v_k[i] in key
// order, vectorized across i (each lane is its own sequential chain, so SIMD across the value
// dimension is exact). Partials fold in block order (attn_fold, vectorized over i).
//
// Cache elements are dequantized on the fly, 8 at a time into a register (d * q is exact in
// float): the cache is never copied or widened. The group's query heads of one token see the
// same keys, so they share every K and V load.
//
// Threads (oneTBB): a prompt runs (tile of tokens, kv head) tasks, each folding its blocks in
// order as it goes; a decode step (a few tokens) runs one task per key block, each writing its
// block's partial (m_b, l_b, o_b) to a buffer, then folds the partials in block order. Each
// partial depends on its block alone, so the bits do not depend on the split or thread count.
// Sinks (src[5]) fold in after the last block, in either form (attn_fold_sink).
#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "core/ir/op_params.h"
#include "core/quant/quant_blocks.h"
#include "core/ref/ref_ops.h"
#include "core/rules/attention_rule.h"
#include "cpu/ops/cpu_ops.h"
#include "cpu/simd.h"

#if defined(__AVX2__) && defined(__F16C__)
#define LS_ATTN_AVX2 1
#include <immintrin.h>
#endif

namespace ls::cpu {

#if defined(LS_ATTN_AVX2)
namespace {
using namespace ls::qb;

// ---- 8 cache values of a row from element e (a multiple of 8), exactly as row_to_f32
template <DType T> [[gnu::always_inline]] inline __m256 load8(const uint8_t* row, int64_t e) {
    if constexpr (T == DType::F32) {
        return _mm256_loadu_ps(reinterpret_cast<const float*>(row) + e);
    } else if constexpr (T == DType::F16) {
        return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(row + 2 * e)));
    } else if constexpr (T == DType::BF16) {
        const __m256i h = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(row + 2 * e)));
        return _mm256_castsi256_ps(_mm256_slli_epi32(h, 16));
    } else if constexpr (T == DType::Q8_0) {
        const BlockQ8_0& b = reinterpret_cast<const BlockQ8_0*>(row)[e / QK];
        const __m128i q = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(b.qs + e % QK));
        return _mm256_mul_ps(_mm256_set1_ps(_cvtsh_ss(b.d)), _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(q)));
    } else {
        static_assert(T == DType::Q4_0);
        // Element j < 16 of a block is the low nibble of qs[j], j >= 16 the high nibble of qs[j - 16].
        const BlockQ4_0& b = reinterpret_cast<const BlockQ4_0*>(row)[e / QK];
        const int64_t j = e % QK;
        __m128i raw = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(b.qs + (j & 15)));
        if (j >= 16) raw = _mm_srli_epi16(raw, 4);
        const __m256i u = _mm256_cvtepu8_epi32(_mm_and_si128(raw, _mm_set1_epi8(0x0F)));
        const __m256 x = _mm256_cvtepi32_ps(_mm256_sub_epi32(u, _mm256_set1_epi32(8)));
        return _mm256_mul_ps(_mm256_set1_ps(_cvtsh_ss(b.d)), x);
    }
}

// ---- scores: sc[i][j] = canon_dot(q_i, k_j) for NQ queries sharing each K load
template <DType T, int NQ>
void qk_rows(const float* const* q, const uint8_t* const* krow, int64_t n, int64_t e0, int64_t D, float* const* sc) {
    for (int64_t j = 0; j < n; ++j) {
        const uint8_t* kr = krow[j];
        __m256 acc[NQ][4];
        for (auto& a : acc)
            for (auto& x : a) x = _mm256_setzero_ps();
        int64_t d = 0;
        for (; d + 32 <= D; d += 32)
            for (int c = 0; c < 4; ++c) {
                const __m256 kv = load8<T>(kr, e0 + d + 8 * c);
                for (int i = 0; i < NQ; ++i) acc[i][c] = _mm256_add_ps(acc[i][c], _mm256_mul_ps(_mm256_loadu_ps(q[i] + d + 8 * c), kv));
            }
        for (int c = 0; d < D; d += 8, ++c) {  // D % 32 != 0: the last chunks of 8 (lanes 8c..8c+7)
            const __m256 kv = load8<T>(kr, e0 + d);
            for (int i = 0; i < NQ; ++i) acc[i][c] = _mm256_add_ps(acc[i][c], _mm256_mul_ps(_mm256_loadu_ps(q[i] + d), kv));
        }
        for (int i = 0; i < NQ; ++i) sc[i][j] = simd::tree32(acc[i][0], acc[i][1], acc[i][2], acc[i][3]);
    }
}

// ---- o_b: ob[i][d0 .. d0 + 8C) = sum over keys j in order of p[i][j] * v_j (from +0)
template <DType T, int NQ, int C>
void pv_chunk(const float* const* p, const uint8_t* const* vrow, int64_t n, int64_t e0, int64_t d0, float* const* ob) {
    __m256 acc[NQ][C];
    for (auto& a : acc)
        for (auto& x : a) x = _mm256_setzero_ps();
    for (int64_t j = 0; j < n; ++j) {
        __m256 w[NQ];
        for (int i = 0; i < NQ; ++i) w[i] = _mm256_broadcast_ss(p[i] + j);
        for (int c = 0; c < C; ++c) {
            const __m256 vv = load8<T>(vrow[j], e0 + d0 + 8 * c);
            for (int i = 0; i < NQ; ++i) acc[i][c] = _mm256_add_ps(acc[i][c], _mm256_mul_ps(w[i], vv));
        }
    }
    for (int i = 0; i < NQ; ++i)
        for (int c = 0; c < C; ++c) _mm256_storeu_ps(ob[i] + d0 + 8 * c, acc[i][c]);
}
// Accumulators in registers: NQ * C of them, 8 to 12 of AVX2's 16.
template <DType T, int NQ>
void pv_rows(const float* const* p, const uint8_t* const* vrow, int64_t n, int64_t e0, int64_t D, float* const* ob) {
    constexpr int C = NQ == 1 ? 8 : NQ == 2 ? 4 : 2;
    int64_t d0 = 0;
    for (; d0 + 8 * C <= D; d0 += 8 * C) pv_chunk<T, NQ, C>(p, vrow, n, e0, d0, ob);
    for (; d0 < D; d0 += 8) pv_chunk<T, NQ, 1>(p, vrow, n, e0, d0, ob);
}

template <DType T>
void qk_any(int nq, const float* const* q, const uint8_t* const* krow, int64_t n, int64_t e0, int64_t D, float* const* sc) {
    // Pairs of queries: two sets of four partial-sum registers stay in registers.
    for (int i = 0; i < nq; i += 2) {
        if (nq - i >= 2) qk_rows<T, 2>(q + i, krow, n, e0, D, sc + i);
        else qk_rows<T, 1>(q + i, krow, n, e0, D, sc + i);
    }
}
template <DType T>
void pv_any(int nq, const float* const* p, const uint8_t* const* vrow, int64_t n, int64_t e0, int64_t D, float* const* ob) {
    switch (nq) {
        case 1: return pv_rows<T, 1>(p, vrow, n, e0, D, ob);
        case 2: return pv_rows<T, 2>(p, vrow, n, e0, D, ob);
        case 3: return pv_rows<T, 3>(p, vrow, n, e0, D, ob);
        default: return pv_rows<T, 4>(p, vrow, n, e0, D, ob);
    }
}
#define LS_ATTN_DISPATCH(t, fn, ...)                                    \
    switch (t) {                                                        \
        case DType::F32: return fn<DType::F32>(__VA_ARGS__);            \
        case DType::F16: return fn<DType::F16>(__VA_ARGS__);            \
        case DType::BF16: return fn<DType::BF16>(__VA_ARGS__);          \
        case DType::Q8_0: return fn<DType::Q8_0>(__VA_ARGS__);          \
        default: return fn<DType::Q4_0>(__VA_ARGS__);                   \
    }
void qk(DType t, int nq, const float* const* q, const uint8_t* const* krow, int64_t n, int64_t e0, int64_t D, float* const* sc) {
    LS_ATTN_DISPATCH(t, qk_any, nq, q, krow, n, e0, D, sc)
}
void pv(DType t, int nq, const float* const* p, const uint8_t* const* vrow, int64_t n, int64_t e0, int64_t D, float* const* ob) {
    LS_ATTN_DISPATCH(t, pv_any, nq, p, vrow, n, e0, D, ob)
}
#undef LS_ATTN_DISPATCH

bool cache_type_ok(DType t) {
    return t == DType::F32 || t == DType::F16 || t == DType::BF16 || t == DType::Q8_0 || t == DType::Q4_0;
}

constexpr int kMaxSub = 4;  // query heads sharing a K/V load (one token's heads of a kv head)

// The partials of one block for up to kMaxSub query heads of one token: raw scores in sc,
// then p_k in place; mb, lb and ob[i][0..Dv) written.
struct BlockScratch {
    alignas(64) float sc[kMaxSub][kAttnBlock] = {};  // lanes past a block's keys stay finite
};

struct Ctx {
    const Tensor *q, *k, *v, *dst;
    const int32_t *pos, *seq;
    const float* sinks;  // F32 [H] or null
    AttentionParams p;
    int64_t Dk, Dv, R, group, T;

    // Visible keys [lo, hi] of token t within block b (empty: lo > hi).
    void range(int64_t t, int64_t b, int64_t& lo, int64_t& hi) const {
        lo = std::max(attn_first_of(pos, t, T, p.window), b * kAttnBlock);
        hi = std::min<int64_t>(pos[t], b * kAttnBlock + kAttnBlock - 1);
    }
    int64_t first_block(int64_t t) const { return attn_block_of(attn_first_of(pos, t, T, p.window)); }

    // Block b's partial for heads h0 .. h0 + nq - 1 (one kv head hk) of token t, keys [lo, hi].
    void partial(int64_t t, int64_t hk, int64_t h0, int nq, int64_t lo, int64_t hi, BlockScratch& s, float* mb, float* lb,
                 float* const* ob) const {
        int64_t ts[kMaxSub], hs[kMaxSub];
        for (int i = 0; i < nq; ++i) ts[i] = t, hs[i] = h0 + i;
        partial(ts, hs, hk, nq, lo, hi, s, mb, lb, ob);
    }
    // The same for nq queries (token ts[i], head hs[i], all of kv head hk) that see the same keys
    // of the same sequence: each query's arithmetic is its own, so sharing the loads changes no bit.
    void partial(const int64_t* ts, const int64_t* hs, int64_t hk, int nq, int64_t lo, int64_t hi, BlockScratch& s, float* mb,
                 float* lb, float* const* ob) const {
        const int64_t n = hi - lo + 1, sq = seq[ts[0]];
        const uint8_t* krow[kAttnBlock];
        const uint8_t* vrow[kAttnBlock];
        for (int64_t j = 0; j < n; ++j) {
            const int64_t rr = ring_row(sq, lo + j, R);
            krow[j] = k->row(rr);
            vrow[j] = v->row(rr);
        }
        const float* qp[kMaxSub];
        float* sp[kMaxSub];
        for (int i = 0; i < nq; ++i) {
            qp[i] = reinterpret_cast<const float*>(q->row(hs[i], ts[i]));
            sp[i] = s.sc[i];
        }
        qk(k->type, nq, qp, krow, n, hk * Dk, Dk, sp);
        for (int i = 0; i < nq; ++i) {
            float* x = s.sc[i];
            using simd::fbatch;
            // x = dot * scale, soft-capped; the lanes past n compute on stale values, never read.
            const int64_t nv = (n + simd::W - 1) / simd::W * simd::W;
            for (int64_t j = 0; j < nv; j += simd::W) {
                fbatch y = fbatch::load_aligned(x + j) * fbatch(p.scale);
                if (p.softcap > 0) y = fbatch(p.softcap) * simd::det_tanh(y / fbatch(p.softcap));
                y.store_aligned(x + j);
            }
            float m = -INFINITY;
            for (int64_t j = 0; j < n; ++j) m = std::fmax(m, x[j]);
            for (int64_t j = 0; j < nv; j += simd::W) simd::det_exp(fbatch::load_aligned(x + j) - fbatch(m)).store_aligned(x + j);
            float l = 0.0f;
            for (int64_t j = 0; j < n; ++j) l = l + x[j];
            mb[i] = m;
            lb[i] = l;
        }
        const float* pp[kMaxSub];
        for (int i = 0; i < nq; ++i) pp[i] = s.sc[i];
        pv(v->type, nq, pp, vrow, n, hk * Dv, Dv, ob);
    }
};

// attn_fold (core/rules/attention_rule.h) with the o update vectorized: o = o * a + ob * c.
void fold(float& m, float& l, float* o, float mb, float lb, const float* ob, int64_t Dv) {
    const float mn = std::fmax(m, mb);
    const float a = det_exp(m - mn), c = det_exp(mb - mn);
    l = l * a + lb * c;
    const __m256 va = _mm256_set1_ps(a), vc = _mm256_set1_ps(c);
    int64_t i = 0;
    for (; i + 8 <= Dv; i += 8)
        _mm256_storeu_ps(o + i, _mm256_add_ps(_mm256_mul_ps(_mm256_loadu_ps(o + i), va), _mm256_mul_ps(_mm256_loadu_ps(ob + i), vc)));
    for (; i < Dv; ++i) o[i] = o[i] * a + ob[i] * c;
    m = mn;
}
// attn_fold_sink (core/rules/attention_rule.h) with o = o * a vectorized.
void fold_sink(float& m, float& l, float* o, float s, int64_t Dv) {
    const float mn = std::fmax(m, s);
    const float a = det_exp(m - mn), c = det_exp(s - mn);
    l = l * a + c;
    const __m256 va = _mm256_set1_ps(a);
    int64_t i = 0;
    for (; i + 8 <= Dv; i += 8) _mm256_storeu_ps(o + i, _mm256_mul_ps(_mm256_loadu_ps(o + i), va));
    for (; i < Dv; ++i) o[i] = o[i] * a;
    m = mn;
}
// out = o / l, correctly rounded (divps).
void finish(float* o, float l, int64_t Dv) {
    const __m256 vl = _mm256_set1_ps(l);
    int64_t i = 0;
    for (; i + 8 <= Dv; i += 8) _mm256_storeu_ps(o + i, _mm256_div_ps(_mm256_loadu_ps(o + i), vl));
    for (; i < Dv; ++i) o[i] = canon_div(o[i], l);
}

// A tile: tokens [t0, t1) of the ubatch.
struct Tile {
    int64_t t0, t1;
};

// Prompt form: one task per (tile, kv head); the tile's tokens fold their blocks in order into
// their output rows (o), m and l kept aside.
void run_tiles(const Ctx& cx, const std::vector<Tile>& tiles, int64_t Hkv) {
    tbb::parallel_for(int64_t(0), int64_t(tiles.size()) * Hkv, [&](int64_t task) {
        const Tile& tl = tiles[size_t(task / Hkv)];
        const int64_t hk = task % Hkv;
        BlockScratch s;
        std::vector<float> obuf(size_t(kMaxSub * cx.Dv));
        // nq queries (token ts[i], head hs[i]) that see the same keys, each folding its blocks in
        // order into its output row; the first block's partial is the running state, in place.
        auto run = [&](const int64_t* ts, const int64_t* hs, int nq) {
            const int64_t t = ts[0];
            float m[kMaxSub], l[kMaxSub], mb[kMaxSub], lb[kMaxSub];
            float* out[kMaxSub];
            float* ob[kMaxSub];
            for (int i = 0; i < nq; ++i) out[i] = reinterpret_cast<float*>(cx.dst->row(hs[i], ts[i]));
            const int64_t bf = cx.first_block(t), bl = attn_block_of(cx.pos[t]);
            for (int64_t b = bf; b <= bl; ++b) {
                int64_t lo, hi;
                cx.range(t, b, lo, hi);
                for (int i = 0; i < nq; ++i) ob[i] = b == bf ? out[i] : obuf.data() + i * cx.Dv;
                cx.partial(ts, hs, hk, nq, lo, hi, s, b == bf ? m : mb, b == bf ? l : lb, ob);
                if (b != bf)
                    for (int i = 0; i < nq; ++i) fold(m[i], l[i], out[i], mb[i], lb[i], ob[i], cx.Dv);
            }
            for (int i = 0; i < nq; ++i) {
                if (cx.sinks) fold_sink(m[i], l[i], out[i], cx.sinks[hs[i]], cx.Dv);
                finish(out[i], l[i], cx.Dv);
            }
        };
        int64_t ts[kMaxSub], hs[kMaxSub];
        if (cx.group == 1) {
            // No query heads to share a K/V load: share it among tokens that see the same keys
            // (a vision encoder's patches, an image block), up to kMaxSub at a time.
            for (int64_t t = tl.t0; t < tl.t1;) {
                int nq = 1;
                const int64_t first = attn_first_of(cx.pos, t, cx.T, cx.p.window);
                while (nq < kMaxSub && t + nq < tl.t1 && cx.pos[t + nq] == cx.pos[t] && cx.seq[t + nq] == cx.seq[t] &&
                       attn_first_of(cx.pos, t + nq, cx.T, cx.p.window) == first)
                    ++nq;
                for (int i = 0; i < nq; ++i) ts[i] = t + i, hs[i] = hk;
                run(ts, hs, nq);
                t += nq;
            }
            return;
        }
        // The group's query heads of one token, up to kMaxSub at a time.
        for (int64_t t = tl.t0; t < tl.t1; ++t)
            for (int64_t g0 = 0; g0 < cx.group; g0 += kMaxSub) {
                const int nq = int(std::min<int64_t>(kMaxSub, cx.group - g0));
                for (int i = 0; i < nq; ++i) ts[i] = t, hs[i] = hk * cx.group + g0 + i;
                run(ts, hs, nq);
            }
    });
}

// Decode form: one task per (token, kv head, block) into a buffer of partials, then one per
// (token, head) folding them in block order.
void run_split(const Ctx& cx, int64_t T, int64_t H, int64_t Hkv) {
    std::vector<int64_t> base(size_t(T) + 1, 0);  // token t's blocks: partial slots base[t] ..
    for (int64_t t = 0; t < T; ++t) base[size_t(t) + 1] = base[size_t(t)] + attn_block_of(cx.pos[t]) - cx.first_block(t) + 1;
    const int64_t stride = cx.Dv + 2;  // m_b, l_b, o_b[Dv]
    thread_local std::vector<float> buf;  // reused: a fresh large buffer per call would be page-faulted in
    buf.resize(size_t(base[size_t(T)] * H * stride));
    float* const pb = buf.data();
    // Slot of (token t, block index jb from its first block, head h).
    auto slot = [&](int64_t t, int64_t jb, int64_t h) { return pb + ((base[size_t(t)] + jb) * H + h) * stride; };
    tbb::parallel_for(int64_t(0), base[size_t(T)] * Hkv, [&](int64_t task) {
        const int64_t gb = task / Hkv, hk = task % Hkv;
        const int64_t t = int64_t(std::upper_bound(base.begin(), base.end(), gb) - base.begin()) - 1;
        const int64_t jb = gb - base[size_t(t)], b = cx.first_block(t) + jb;
        int64_t lo, hi;
        cx.range(t, b, lo, hi);
        BlockScratch s;
        for (int64_t g0 = 0; g0 < cx.group; g0 += kMaxSub) {
            const int nq = int(std::min<int64_t>(kMaxSub, cx.group - g0));
            const int64_t h0 = hk * cx.group + g0;
            float mb[kMaxSub], lb[kMaxSub];
            float* ob[kMaxSub];
            for (int i = 0; i < nq; ++i) ob[i] = slot(t, jb, h0 + i) + 2;
            cx.partial(t, hk, h0, nq, lo, hi, s, mb, lb, ob);
            for (int i = 0; i < nq; ++i) {
                slot(t, jb, h0 + i)[0] = mb[i];
                slot(t, jb, h0 + i)[1] = lb[i];
            }
        }
    });
    tbb::parallel_for(int64_t(0), T * H, [&](int64_t task) {
        const int64_t t = task / H, h = task % H, nb = base[size_t(t) + 1] - base[size_t(t)];
        float* out = reinterpret_cast<float*>(cx.dst->row(h, t));
        const float* s0 = slot(t, 0, h);
        float m = s0[0], l = s0[1];
        std::copy(s0 + 2, s0 + 2 + cx.Dv, out);
        for (int64_t jb = 1; jb < nb; ++jb) {
            const float* sj = slot(t, jb, h);
            fold(m, l, out, sj[0], sj[1], sj + 2, cx.Dv);
        }
        if (cx.sinks) fold_sink(m, l, out, cx.sinks[h], cx.Dv);
        finish(out, l, cx.Dv);
    });
}

}  // namespace
#endif

// Visibility and ring rows come from core/rules/attention_rule.h, as in the reference.
void attention(const Tensor& dst) {
    const Tensor& q = *dst.src[0];
    const Tensor& k = *dst.src[1];
    const Tensor& v = *dst.src[2];
    const int32_t* pos = dst.src[3]->data_as<const int32_t>();
    const int32_t* seq = dst.src[4]->data_as<const int32_t>();
    const AttentionParams p = dst.get_params<AttentionParams>();
    const int64_t Dk = q.ne[0], H = q.ne[1], T = q.ne[2], Dv = dst.ne[0];
    const int64_t R = p.ring_rows, n_seq = k.ne[1] / R, Hkv = p.n_head_kv;
    for (int64_t t = 0; t < T; ++t) check_attention_query(seq[t], pos[t], attn_first_of(pos, t, T, p.window), R, n_seq);
#if defined(LS_ATTN_AVX2)
    // Every cache type the KV cache offers (and BF16), head sizes in whole registers. Anything
    // else (none in use) runs the reference itself.
    if (Dk % 8 == 0 && Dv % 8 == 0 && cache_type_ok(k.type) && cache_type_ok(v.type)) {
        const float* sinks = dst.src[5] ? dst.src[5]->data_as<const float>() : nullptr;
        const Ctx cx{&q, &k, &v, &dst, pos, seq, sinks, p, Dk, Dv, R, H / Hkv, T};
        // A few tokens (decode steps): split over key blocks. Otherwise tiles of tokens, about
        // 8 tasks at least, 16 tokens at most per tile (each token reads only its own keys).
        if (T <= 4) return run_split(cx, T, H, Hkv);
        const int64_t per = std::clamp<int64_t>(T * Hkv / 8, 1, 16);
        std::vector<Tile> tiles;
        for (int64_t t = 0; t < T; t += per) tiles.push_back({t, std::min(T, t + per)});
        return run_tiles(cx, tiles, Hkv);
    }
#endif
    ref::attention(dst);
}

}  // namespace ls::cpu
