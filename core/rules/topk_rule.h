// The selection rule of the topk op (mixture-of-experts routing), one definition for every
// backend (LS_HD: CUDA kernels compile it too). Entries are ordered "larger value first,
// NaN last, equal values by lower index", a total order, so the k first entries of a
// column are one set in one order on every backend.
#pragma once
#include <cstdint>

#include "core/rules/canon.h"
#include "core/rules/hd.h"

namespace ls {

// At most this many selected entries (per-thread arrays on GPUs).
constexpr int kTopkMax = 64;

// Whether entry (xa, a) comes before entry (xb, b).
LS_HD inline bool topk_before(float xa, int32_t a, float xb, int32_t b) {
    const bool na = xa != xa, nb = xb != xb;  // NaN
    if (na != nb) return nb;
    if (!na && xa != xb) return xa > xb;
    return a < b;
}

// ids[0..k) = the first k entries of x[0..n) (stride between entries: `stride` floats), in
// order, among the entries e with keep[e / m] (keep null: all of them). Each pick is the best
// entry after the previous pick: O(n k), no marks.
LS_HD inline void topk_select(const float* x, int64_t stride, int32_t n, int32_t k, int32_t* ids, const bool* keep = nullptr,
                              int32_t m = 1) {
    for (int32_t j = 0; j < k; ++j) {
        int32_t best = -1;
        for (int32_t e = 0; e < n; ++e) {
            if (keep && !keep[e / m]) continue;
            const float v = x[e * stride];
            if (j > 0 && !topk_before(x[ids[j - 1] * stride], ids[j - 1], v, e)) continue;
            if (best < 0 || topk_before(v, e, x[best * stride], best)) best = e;
        }
        ids[j] = best;
    }
}

// topk_select under TopkParams' groups (n_group > 1; otherwise plain): group g's score is the
// sum of its group_top best entries in selection order, the group_used best groups are kept
// (topk_select over the scores), and the k entries are picked among the kept groups' entries.
LS_HD inline void topk_select_grouped(const float* x, int64_t stride, int32_t n, int32_t k, int32_t n_group, int32_t group_used,
                                      int32_t group_top, int32_t* ids) {
    if (n_group <= 1) {
        topk_select(x, stride, n, k, ids);
        return;
    }
    const int32_t m = n / n_group;
    float score[kTopkMax];
    int32_t pick[kTopkMax];
    bool keep[kTopkMax];
    for (int32_t gi = 0; gi < n_group; ++gi) {
        topk_select(x + gi * m * stride, stride, m, group_top, pick);
        float s = x[(gi * m + pick[0]) * stride];
        for (int32_t j = 1; j < group_top; ++j) s = s + x[(gi * m + pick[j]) * stride];
        score[gi] = s;
        keep[gi] = false;
    }
    topk_select(score, 1, n_group, group_used, pick);
    for (int32_t j = 0; j < group_used; ++j) keep[pick[j]] = true;
    topk_select(x, stride, n, k, ids, keep, m);
}

// The selected values, divided by their sum when norm: the sum is canon_sum over the values
// in selection order (core/rules/canon.h rule 5), each quotient correctly rounded.
LS_HD inline void topk_values(const float* x, int64_t stride, const int32_t* ids, int32_t k, bool norm, float* out) {
    const float s = norm ? canon_sum_of(k, [&](int64_t j) { return x[ids[j] * stride]; }) : 1.0f;
    for (int32_t j = 0; j < k; ++j) out[j] = norm ? canon_div(x[ids[j] * stride], s) : x[ids[j] * stride];
}

}  // namespace ls
