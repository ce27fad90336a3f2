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
#include <tbb/cache_aligned_allocator.h>
#include <tbb/parallel_for.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "core/ir/op_params.h"
#include "core/quant/dtype.h"
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

// ---- Cache rows into L2 ahead of use: a step's keys and values come from memory (the weight
// stream evicts them between steps), and the hardware prefetchers do not run far enough ahead
// on rows a few hundred bytes long to keep many misses in flight. Bytes [off, off + len) of row.
[[gnu::always_inline]] inline void prefetch_row(const uint8_t* row, size_t off, size_t len) {
    // Every cache line the bytes touch, from the line of the first one.
    const uintptr_t lo = reinterpret_cast<uintptr_t>(row + off) & ~uintptr_t(63), hi = reinterpret_cast<uintptr_t>(row + off + len);
    for (uintptr_t a = lo; a < hi; a += 64) _mm_prefetch(reinterpret_cast<const char*>(a), _MM_HINT_T1);
}
constexpr int64_t kKeyAhead = 8;  // key rows the score loop prefetches ahead of the one it reads
// The bytes of a row holding its elements [e0, e0 + n): whole blocks of a quantized type (a
// head of 40 elements of Q8_0 starts and ends inside blocks).
struct RowSpan {
    size_t off, len;
};
inline RowSpan row_span(DType t, int64_t e0, int64_t n) {
    const DTypeTraits& tr = traits(t);
    const size_t lo = size_t(e0 / tr.block) * tr.block_bytes, hi = size_t((e0 + n + tr.block - 1) / tr.block) * tr.block_bytes;
    return {lo, hi - lo};
}

#if defined(__AVX512F__)
// ---- 16 cache values of a row from element e (a multiple of 16), exactly as row_to_f32
template <DType T> [[gnu::always_inline]] inline __m512 load16(const uint8_t* row, int64_t e) {
    if constexpr (T == DType::F32) {
        return _mm512_loadu_ps(reinterpret_cast<const float*>(row) + e);
    } else if constexpr (T == DType::F16) {
        return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(row + 2 * e)));
    } else if constexpr (T == DType::BF16) {
        const __m512i h = _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(row + 2 * e)));
        return _mm512_castsi512_ps(_mm512_slli_epi32(h, 16));
    } else if constexpr (T == DType::Q8_0) {
        const BlockQ8_0& b = reinterpret_cast<const BlockQ8_0*>(row)[e / QK];
        const __m128i q = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b.qs + e % QK));
        return _mm512_mul_ps(_mm512_set1_ps(_cvtsh_ss(b.d)), _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(q)));
    } else {
        static_assert(T == DType::Q4_0);
        // Elements 0..15 of a block are the low nibbles of qs[0..15], 16..31 the high ones.
        const BlockQ4_0& b = reinterpret_cast<const BlockQ4_0*>(row)[e / QK];
        __m128i raw = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b.qs));
        if (e % QK >= 16) raw = _mm_srli_epi16(raw, 4);
        const __m512i u = _mm512_cvtepu8_epi32(_mm_and_si128(raw, _mm_set1_epi8(0x0F)));
        const __m512 x = _mm512_cvtepi32_ps(_mm512_sub_epi32(u, _mm512_set1_epi32(8)));
        return _mm512_mul_ps(_mm512_set1_ps(_cvtsh_ss(b.d)), x);
    }
}
// ---- o_b as pv_chunk, 16 values a register: ob[i][d0 .. d0 + 16C) = sum over keys j in order
// of p[i][j] * v_j (from +0); each lane its own sequential chain, so the width changes no bit.
template <DType T, int NQ, int C>
void pv_chunk16(const float* const* p, const uint8_t* const* vrow, int64_t n, int64_t e0, int64_t d0, float* const* ob) {
    __m512 acc[NQ][C];
    for (auto& a : acc)
        for (auto& x : a) x = _mm512_setzero_ps();
    for (int64_t j = 0; j < n; ++j) {
        __m512 w[NQ];
        for (int i = 0; i < NQ; ++i) w[i] = _mm512_set1_ps(p[i][j]);
        for (int c = 0; c < C; ++c) {
            const __m512 vv = load16<T>(vrow[j], e0 + d0 + 16 * c);
            for (int i = 0; i < NQ; ++i) acc[i][c] = _mm512_add_ps(acc[i][c], _mm512_mul_ps(w[i], vv));
        }
    }
    for (int i = 0; i < NQ; ++i)
        for (int c = 0; c < C; ++c) _mm512_storeu_ps(ob[i] + d0 + 16 * c, acc[i][c]);
}
#endif

// ---- scores: sc[i][j] = canon_dot(q_i, k_j) for NQ queries sharing each K load
template <DType T, int NQ>
void qk_rows(const float* const* q, const uint8_t* const* krow, int64_t n, int64_t e0, int64_t D, float* const* sc) {
    const RowSpan span = row_span(T, e0, D);
    for (int64_t j = 0; j < n; ++j) {
        const uint8_t* kr = krow[j];
        if (j + kKeyAhead < n) prefetch_row(krow[j + kKeyAhead], span.off, span.len);
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
    // (The loops over i and c unrolled early, so that the accumulators become registers: with
    // them rolled, GCC 12 also stored every accumulator to the stack on every key, 8 stores a
    // key on one store port.)
    __m256 acc[NQ][C];
#pragma GCC unroll 16
    for (int i = 0; i < NQ; ++i)
#pragma GCC unroll 16
        for (int c = 0; c < C; ++c) acc[i][c] = _mm256_setzero_ps();
    for (int64_t j = 0; j < n; ++j) {
        __m256 w[NQ];
#pragma GCC unroll 16
        for (int i = 0; i < NQ; ++i) w[i] = _mm256_broadcast_ss(p[i] + j);
#pragma GCC unroll 16
        for (int c = 0; c < C; ++c) {
            const __m256 vv = load8<T>(vrow[j], e0 + d0 + 8 * c);
#pragma GCC unroll 16
            for (int i = 0; i < NQ; ++i) acc[i][c] = _mm256_add_ps(acc[i][c], _mm256_mul_ps(w[i], vv));
        }
    }
#pragma GCC unroll 16
    for (int i = 0; i < NQ; ++i)
#pragma GCC unroll 16
        for (int c = 0; c < C; ++c) _mm256_storeu_ps(ob[i] + d0 + 8 * c, acc[i][c]);
}
// Accumulators in registers: NQ * C of them, 8 to 12 of AVX2's 16.
template <DType T, int NQ>
void pv_rows(const float* const* p, const uint8_t* const* vrow, int64_t n, int64_t e0, int64_t D, float* const* ob) {
    int64_t d0 = 0;
#if defined(__AVX512F__)
    // 16 values a register: NQ * C16 accumulators, 16 of the 32 (8 with one query).
    // (A quantized block's 16 values must start at its element 0 or 16: e0 a multiple of 16.)
    constexpr int C16 = NQ == 1 ? 8 : NQ == 2 ? 8 : NQ == 3 ? 5 : 4;
    constexpr bool kFloat = T == DType::F32 || T == DType::F16 || T == DType::BF16;
    if (kFloat || e0 % 16 == 0) {
        for (; d0 + 16 * C16 <= D; d0 += 16 * C16) pv_chunk16<T, NQ, C16>(p, vrow, n, e0, d0, ob);
        for (; d0 + 16 <= D; d0 += 16) pv_chunk16<T, NQ, 1>(p, vrow, n, e0, d0, ob);
    }
#endif
    constexpr int C = NQ == 1 ? 8 : NQ == 2 ? 4 : 2;
    for (; d0 + 8 * C <= D; d0 += 8 * C) pv_chunk<T, NQ, C>(p, vrow, n, e0, d0, ob);
    for (; d0 < D; d0 += 8) pv_chunk<T, NQ, 1>(p, vrow, n, e0, d0, ob);
}

#if defined(__AVX512F__)
// ---- scores as qk_rows, the 32 lane partials in two 16-float registers (lanes 0-15, 16-31):
// the same chains, and simd::tree adds them as tree32 does (lane l + lane l + 16 first), so the
// same bits. All NQ <= 4 queries share each K load (8 accumulators of the 32), where the
// 8-float form takes queries in pairs and loads (and converts) every key row twice.
template <DType T, int NQ>
void qk_rows16(const float* const* q, const uint8_t* const* krow, int64_t n, int64_t e0, int64_t D, float* const* sc) {
    const RowSpan span = row_span(T, e0, D);
    for (int64_t j = 0; j < n; ++j) {
        const uint8_t* kr = krow[j];
        if (j + kKeyAhead < n) prefetch_row(krow[j + kKeyAhead], span.off, span.len);
        simd::vecf acc[NQ][2];
        for (auto& a : acc) a[0] = a[1] = _mm512_setzero_ps();
        for (int64_t d = 0; d < D; d += 32)
            for (int c = 0; c < 2; ++c) {
                const __m512 kv = load16<T>(kr, e0 + d + 16 * c);
                for (int i = 0; i < NQ; ++i) acc[i][c] = _mm512_add_ps(acc[i][c], _mm512_mul_ps(_mm512_loadu_ps(q[i] + d + 16 * c), kv));
            }
        for (int i = 0; i < NQ; ++i) sc[i][j] = simd::tree(acc[i]);
    }
}
#endif

template <DType T>
void qk_any(int nq, const float* const* q, const uint8_t* const* krow, int64_t n, int64_t e0, int64_t D, float* const* sc) {
#if defined(__AVX512F__)
    // Whole 32-lane chunks (a tail of 8 would land in the upper register's low half), and a
    // quantized block's 16 values starting at its element 0 or 16.
    constexpr bool kFloat = T == DType::F32 || T == DType::F16 || T == DType::BF16;
    if (D % 32 == 0 && (kFloat || e0 % 16 == 0)) {
        switch (nq) {
            case 1: return qk_rows16<T, 1>(q, krow, n, e0, D, sc);
            case 2: return qk_rows16<T, 2>(q, krow, n, e0, D, sc);
            case 3: return qk_rows16<T, 3>(q, krow, n, e0, D, sc);
            case 4: return qk_rows16<T, 4>(q, krow, n, e0, D, sc);
            default: break;
        }
    }
#endif
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

#if defined(__AVX512F__)
// ---- Many queries that see the same keys (a vision encoder's patches, an image's tokens; no
// query-head groups): the key block transposed once, kt[i * kAttnBlock + j] = k_j[i] (as
// row_to_f32; zeros past the block's keys), then each query's scores 16 keys at a time, keys
// in lanes. A score is canon_dot's: lane partial a_l = the sum over i = l (mod 32) in
// increasing i from +0, then the fixed tree, here node(l, w) = node(l, 2w) + node(l + w, 2w)
// with node(l, 32) = a_l and the score node(0, 1): the same operations on the same values, so
// the same bits, without a horizontal sum per key.
template <DType T>
void transpose_keys(const uint8_t* const* krow, int64_t n, int64_t e0, int64_t D, float* kt) {
    alignas(32) float tmp[8];
    for (int64_t j = 0; j < kAttnBlock; ++j) {
        if (j >= n) {
            for (int64_t i = 0; i < D; ++i) kt[i * kAttnBlock + j] = 0.0f;
            continue;
        }
        for (int64_t d = 0; d < D; d += 8) {
            _mm256_store_ps(tmp, load8<T>(krow[j], e0 + d));
            for (int c = 0; c < 8; ++c) kt[(d + c) * kAttnBlock + j] = tmp[c];
        }
    }
}
void transpose_keys(DType t, const uint8_t* const* krow, int64_t n, int64_t e0, int64_t D, float* kt) {
    switch (t) {
        case DType::F32: return transpose_keys<DType::F32>(krow, n, e0, D, kt);
        case DType::F16: return transpose_keys<DType::F16>(krow, n, e0, D, kt);
        case DType::BF16: return transpose_keys<DType::BF16>(krow, n, e0, D, kt);
        case DType::Q8_0: return transpose_keys<DType::Q8_0>(krow, n, e0, D, kt);
        default: return transpose_keys<DType::Q4_0>(krow, n, e0, D, kt);
    }
}
template <int NQ, int L, int W>
[[gnu::always_inline]] inline void score_node(const float* const* q, const float* kt, int64_t D, __m512* out) {
    if constexpr (W == 32) {
        for (int i = 0; i < NQ; ++i) out[i] = _mm512_setzero_ps();
        for (int64_t d = L; d < D; d += 32) {
            const __m512 k = _mm512_load_ps(kt + d * kAttnBlock);
            for (int i = 0; i < NQ; ++i) out[i] = _mm512_add_ps(out[i], _mm512_mul_ps(_mm512_set1_ps(q[i][d]), k));
        }
    } else {
        __m512 a[NQ], b[NQ];
        score_node<NQ, L, 2 * W>(q, kt, D, a);
        score_node<NQ, L + W, 2 * W>(q, kt, D, b);
        for (int i = 0; i < NQ; ++i) out[i] = _mm512_add_ps(a[i], b[i]);
    }
}
// sc[i][j] = canon_dot(q_i, k_j) for the n keys of kt (16 at a time; lanes past n are zeros').
template <int NQ>
void qk_transposed(const float* const* q, const float* kt, int64_t n, int64_t D, float* const* sc) {
    for (int64_t g = 0; g < n; g += 16) {
        __m512 r[NQ];
        score_node<NQ, 0, 1>(q, kt + g, D, r);
        for (int i = 0; i < NQ; ++i) _mm512_store_ps(sc[i] + g, r[i]);
    }
}
void qk_transposed(int nq, const float* const* q, const float* kt, int64_t n, int64_t D, float* const* sc) {
    switch (nq) {
        case 1: return qk_transposed<1>(q, kt, n, D, sc);
        case 2: return qk_transposed<2>(q, kt, n, D, sc);
        case 3: return qk_transposed<3>(q, kt, n, D, sc);
        default: return qk_transposed<4>(q, kt, n, D, sc);
    }
}

#endif

bool cache_type_ok(DType t) {
    return t == DType::F32 || t == DType::F16 || t == DType::BF16 || t == DType::Q8_0 || t == DType::Q4_0;
}

constexpr int kMaxSub = 4;  // query heads sharing a K/V load (one token's heads of a kv head)

// The partials of one block for up to kMaxSub query heads of one token: raw scores in sc,
// then p_k in place; mb, lb and ob[i][0..Dv) written.
struct BlockScratch {
    alignas(64) float sc[kMaxSub][kAttnBlock] = {};  // lanes past a block's keys stay finite
};

// max of x[0..n), NaNs ignored as fmax does (all NaN or empty: -inf). Lane by lane, then
// across lanes: the max of a set is the same whichever order it is taken in (up to the sign of
// a zero, which no use of the block max can tell: it is only subtracted, then exponentiated).
inline float block_max(const float* x, int64_t n) {
    float m = -INFINITY;
    int64_t j = 0;
#if defined(__AVX512F__)
    __m512 r = _mm512_set1_ps(-INFINITY);
    for (; j + 16 <= n; j += 16) {
        const __m512 v = _mm512_loadu_ps(x + j);
        const __mmask16 take = _mm512_cmp_ps_mask(v, r, _CMP_GT_OQ) | _mm512_cmp_ps_mask(r, r, _CMP_UNORD_Q);
        r = _mm512_mask_blend_ps(take, r, v);
    }
    alignas(64) float l[16];
    _mm512_store_ps(l, r);
    for (float v : l) m = std::fmax(m, v);
#else
    // The same with 8 lanes: a lane takes v where v > r, or where r is still NaN.
    __m256 r8 = _mm256_set1_ps(-INFINITY);
    for (; j + 8 <= n; j += 8) {
        const __m256 v = _mm256_loadu_ps(x + j);
        const __m256 take = _mm256_or_ps(_mm256_cmp_ps(v, r8, _CMP_GT_OQ), _mm256_cmp_ps(r8, r8, _CMP_UNORD_Q));
        r8 = _mm256_blendv_ps(r8, v, take);
    }
    alignas(32) float l8[8];
    _mm256_store_ps(l8, r8);
    for (float v : l8) m = std::fmax(m, v);
#endif
    for (; j < n; ++j) m = std::fmax(m, x[j]);
    return m;
}

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
        partial(ts, hs, hk, nq, lo, hi, s, mb, lb, ob, nullptr, true);
    }
    // The same for nq queries (token ts[i], head hs[i], all of kv head hk) that see the same keys
    // of the same sequence: each query's arithmetic is its own, so sharing the loads changes no bit.
    // kt: the block's keys already transposed (transpose_keys), or null. fetch_values: prefetch
    // the block's value rows first (a decode step's block, read once; a prompt tile's blocks
    // are read for each of its tokens and stay in cache).
    void partial(const int64_t* ts, const int64_t* hs, int64_t hk, int nq, int64_t lo, int64_t hi, BlockScratch& s, float* mb,
                 float* lb, float* const* ob, const float* kt = nullptr, bool fetch_values = false) const {
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
        // The values are read after every score of the block: fetched meanwhile.
        if (fetch_values) {
            const RowSpan vs = row_span(v->type, hk * Dv, Dv);
            for (int64_t j = 0; j < n; ++j) prefetch_row(vrow[j], vs.off, vs.len);
        }
#if defined(__AVX512F__)
        if (kt) qk_transposed(nq, qp, kt, n, Dk, sp);
        else
#endif
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
            const float m = block_max(x, n);
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

// Whether every token of a tile sees the same keys: one sequence, one last key, one first key.
bool shares_keys(const Ctx& cx, const Tile& tl) {
    const int64_t t0 = tl.t0, first = attn_first_of(cx.pos, t0, cx.T, cx.p.window);
    for (int64_t t = t0 + 1; t < tl.t1; ++t)
        if (cx.pos[t] != cx.pos[t0] || cx.seq[t] != cx.seq[t0] || attn_first_of(cx.pos, t, cx.T, cx.p.window) != first) return false;
    return true;
}

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
#if defined(__AVX512F__)
        // Every token of the tile sees the same keys (no query-head groups): block by block,
        // its keys transposed once for all of them, each token folding its blocks in order.
        if (cx.group == 1 && shares_keys(cx, tl)) {
            const int64_t t0 = tl.t0, nt = tl.t1 - tl.t0;
            thread_local std::vector<float, tbb::cache_aligned_allocator<float>> kt;
            kt.resize(size_t(cx.Dk * kAttnBlock));
            std::vector<float> m(static_cast<size_t>(nt)), l(static_cast<size_t>(nt));
            const uint8_t* krow[kAttnBlock];
            const int64_t bf = cx.first_block(t0), bl = attn_block_of(cx.pos[t0]);
            for (int64_t b = bf; b <= bl; ++b) {
                int64_t lo, hi;
                cx.range(t0, b, lo, hi);
                for (int64_t j = 0; j <= hi - lo; ++j) krow[j] = cx.k->row(ring_row(cx.seq[t0], lo + j, cx.R));
                transpose_keys(cx.k->type, krow, hi - lo + 1, hk * cx.Dk, cx.Dk, kt.data());
                for (int64_t q0 = 0; q0 < nt; q0 += kMaxSub) {
                    const int nq = int(std::min<int64_t>(kMaxSub, nt - q0));
                    float mb[kMaxSub], lb[kMaxSub];
                    float* out[kMaxSub];
                    float* ob[kMaxSub];
                    for (int i = 0; i < nq; ++i) {
                        ts[i] = t0 + q0 + i, hs[i] = hk;
                        out[i] = reinterpret_cast<float*>(cx.dst->row(hk, ts[i]));
                        ob[i] = b == bf ? out[i] : obuf.data() + i * cx.Dv;
                    }
                    cx.partial(ts, hs, hk, nq, lo, hi, s, b == bf ? m.data() + q0 : mb, b == bf ? l.data() + q0 : lb, ob, kt.data());
                    if (b != bf)
                        for (int i = 0; i < nq; ++i) fold(m[size_t(q0 + i)], l[size_t(q0 + i)], out[i], mb[i], lb[i], ob[i], cx.Dv);
                }
            }
            for (int64_t i = 0; i < nt; ++i) {
                float* out = reinterpret_cast<float*>(cx.dst->row(hk, t0 + i));
                if (cx.sinks) fold_sink(m[size_t(i)], l[size_t(i)], out, cx.sinks[hk], cx.Dv);
                finish(out, l[size_t(i)], cx.Dv);
            }
            return;
        }
#endif
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
        // 8 tasks at least, 16 tokens at most per tile (each token reads only its own keys);
        // without query-head groups 64, so that tokens sharing their keys share more of them.
        if (T <= 4) return run_split(cx, T, H, Hkv);
        const int64_t per = std::clamp<int64_t>(T * Hkv / 8, 1, H == Hkv ? 64 : 16);
        std::vector<Tile> tiles;
        for (int64_t t = 0; t < T; t += per) tiles.push_back({t, std::min(T, t + per)});
        return run_tiles(cx, tiles, Hkv);
    }
#endif
    ref::attention(dst);
}

}  // namespace ls::cpu
