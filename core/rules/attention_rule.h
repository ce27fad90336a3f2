// The visibility and ring-indexing rule of SEMANTICS.md section 1, written once and used by
// every implementation of the attention op and by the KV cache.
#pragma once
#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <string>

#include "core/rules/canon.h"
#include "core/rules/hd.h"

namespace ls {

// First key position a query at position p sees with window W (0 = full attention).
// (LS_HD: the CUDA kernels index with these same two functions.)
LS_HD inline int64_t attn_first_key(int64_t p, int64_t W) { return W > 0 && p - W + 1 > 0 ? p - W + 1 : 0; }
// Window kAttnFirstGiven: the position input is I32 [T, 2], each query's last visible key in
// row 0 (pos[t]) and its first in row 1 (pos[T + t]), for windows no single W describes:
// EmbeddingGemma's local layers see keys with |k - p| <= W / 2 on both sides, clipped to the
// input (attn_symmetric_keys). Every kernel takes a query's first key from here.
constexpr int32_t kAttnFirstGiven = -1;
LS_HD inline int64_t attn_first_of(const int32_t* pos, int64_t t, int64_t T, int64_t W) {
    return W == kAttnFirstGiven ? pos[T + t] : attn_first_key(pos[t], W);
}
// Cache row of key position k of sequence slot s in a ring of R rows per slot.
LS_HD inline int64_t ring_row(int64_t s, int64_t k, int64_t R) { return s * R + k % R; }
// Non-causal (encoder) attention, as the same op: the attention op's position input holds,
// per query, the LAST key position it sees, and the visible keys are attn_first_key(p, W)..p.
// A causal model passes each token's own position. A non-causal model (BERT, nomic-bert)
// passes, for every token of sequence s, the highest position of s in the ubatch, so each
// query sees its whole sequence (every key before and after it). That needs the sequence
// whole in one ubatch, starting at position 0 (Session::decode refuses anything else): a key
// of a later ubatch cannot be seen. Core computes this table once per ubatch (a graph input,
// as CacheRows does for ring rows), so every backend's kernel runs it unchanged.
inline void attn_last_keys(const int32_t* pos, const int32_t* seq, int64_t T, bool causal, int32_t* out) {
    for (int64_t t = 0; t < T; ++t) {
        int32_t last = pos[t];
        if (!causal)
            for (int64_t u = 0; u < T; ++u)
                if (seq[u] == seq[t]) last = std::max(last, pos[u]);
        out[t] = last;
    }
}
// A symmetric window of reach h over non-causal inputs (llama.cpp's LLAMA_SWA_TYPE_SYMMETRIC,
// keys with |k - p| <= h): out[t] = min(last key of t's sequence, p + h), out[T + t] =
// max(0, p - h), the [T, 2] position input of kAttnFirstGiven. (Within one whole sequence
// from position 0, as attn_last_keys needs.)
inline void attn_symmetric_keys(const int32_t* pos, const int32_t* seq, int64_t T, int32_t h, int32_t* out) {
    attn_last_keys(pos, seq, T, false, out);
    for (int64_t t = 0; t < T; ++t) {
        out[t] = int32_t(std::min<int64_t>(out[t], int64_t(pos[t]) + h));
        out[T + t] = std::max(0, pos[t] - h);
    }
}
// Checks that a query (s, p) whose first visible key is k0 can be answered from a cache of
// n_seq slots of R rows.
inline void check_attention_query(int64_t s, int64_t p, int64_t k0, int64_t R, int64_t n_seq) {
    if (s < 0 || s >= n_seq)
        throw std::out_of_range("attention: sequence " + std::to_string(s) + " outside [0, " + std::to_string(n_seq) + ")");
    if (p < 0) throw std::out_of_range("attention: negative position " + std::to_string(p));
    if (k0 < 0 || k0 > p)
        throw std::out_of_range("attention: first key " + std::to_string(k0) + " outside [0, " + std::to_string(p) +
                                "] (the query's last key)");
    if (p - k0 + 1 > R)
        throw std::out_of_range("attention: position " + std::to_string(p) + " needs more than the " +
                                std::to_string(R) + " cache rows of its slot (context full)");
}

// ---- the canonical attention arithmetic (core/rules/canon.h rule 7)
// A query's visible keys k0..p are cut into blocks at absolute positions: block b holds key
// positions [b * kAttnBlock, (b + 1) * kAttnBlock) that are visible. Aligning to positions (not
// to k0) lets a tiled kernel share a block's keys across the queries of a ubatch.
constexpr int64_t kAttnBlock = 64;
LS_HD inline int64_t attn_block_of(int64_t pos) { return pos / kAttnBlock; }

// For one query and head, with scores s_k = canon_dot(q, k_k) * scale (soft-capped when asked):
//   block partial:  m_b = max s_k;  p_k = det_exp(s_k - m_b);
//                   l_b = sum p_k and o_b[i] = sum p_k * v_k[i], both sequential in key order
//                   from +0 (a product rounded, then added);
//   fold in increasing b (the first block's partial is the running state as it is):
//                   m' = max(m, m_b); a = det_exp(m - m'); c = det_exp(m_b - m');
//                   l = l * a + l_b * c;  o[i] = o[i] * a + o_b[i] * c;  m = m'
//   out[i] = o[i] / l (correctly rounded).
// The fold of one block into the running state (o and ob hold Dv values):
LS_HD inline void attn_fold(float& m, float& l, float* o, float mb, float lb, const float* ob, int64_t Dv) {
    const float mn = detp::fmax(m, mb);
    const float a = det_exp(m - mn), c = det_exp(mb - mn);
    l = l * a + lb * c;
    for (int64_t i = 0; i < Dv; ++i) o[i] = o[i] * a + ob[i] * c;
    m = mn;
}

// Attention sinks (gpt-oss): a learned logit s per query head that joins the softmax's
// denominator and adds no value, out = sum_k e^{x_k} v_k / (sum_k e^{x_k} + e^s). In the
// canonical arithmetic it is ONE more fold, after the query's last key block and before the
// division, of the partial (m_b = s, l_b = 1, o_b = 0):
//   m' = max(m, s); a = det_exp(m - m'); c = det_exp(s - m');  l = l * a + c;  o[i] = o[i] * a
// which is attn_fold's arithmetic for that partial with its zero terms left out (1 * c is c
// exactly; o[i] * a + 0 * c would only turn a -0 into +0, and a GPU compiler may or may not
// drop the + 0). Sinks are finite.
LS_HD inline void attn_fold_sink(float& m, float& l, float* o, float s, int64_t Dv) {
    const float mn = detp::fmax(m, s);
    const float a = det_exp(m - mn), c = det_exp(s - mn);
    l = l * a + c;
    for (int64_t i = 0; i < Dv; ++i) o[i] = o[i] * a;
    m = mn;
}

}  // namespace ls
