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
// order. Each pick is the best entry after the previous pick: O(n k), no marks.
LS_HD inline void topk_select(const float* x, int64_t stride, int32_t n, int32_t k, int32_t* ids) {
    for (int32_t j = 0; j < k; ++j) {
        int32_t best = -1;
        for (int32_t e = 0; e < n; ++e) {
            const float v = x[e * stride];
            if (j > 0 && !topk_before(x[ids[j - 1] * stride], ids[j - 1], v, e)) continue;
            if (best < 0 || topk_before(v, e, x[best * stride], best)) best = e;
        }
        ids[j] = best;
    }
}

// The selected values, divided by their sum when norm: the sum is canon_sum over the values
// in selection order (core/rules/canon.h rule 5), each quotient correctly rounded.
LS_HD inline void topk_values(const float* x, int64_t stride, const int32_t* ids, int32_t k, bool norm, float* out) {
    const float s = norm ? canon_sum_of(k, [&](int64_t j) { return x[ids[j] * stride]; }) : 1.0f;
    for (int32_t j = 0; j < k; ++j) out[j] = norm ? canon_div(x[ids[j] * stride], s) : x[ids[j] * stride];
}

}  // namespace ls
