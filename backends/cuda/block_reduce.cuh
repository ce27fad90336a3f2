// The reductions of the op kernels. Every float sum is the canonical sum of
// core/rules/canon.h (rule 5) computed by one warp: lane l holds partial sum l (the terms
// i with i mod 32 == l, added in increasing i from +0), and the fixed tree s[l] += s[l + w]
// for w = 16, 8, 4, 2, 1 is __shfl_down_sync by w. A sum is never spread over several warps
// (that would change the order); a block with several warps gives each its own sums.
// Maxima are exact in any order.
#pragma once
#include <cmath>
#include <cstdint>

#include "backends/cuda/read_ahead.cuh"
#include "backends/cuda/tensor_shape.cuh"
#include "core/rules/canon.h"

namespace ls::cuda {

// The fixed tree over the warp's 32 partial sums (lane l passes partial l): the canonical
// sum, returned to every lane. All 32 lanes must call it.
__device__ inline float warp_canon_tree(float v) {
    for (int w = kCanonLanes / 2; w >= 1; w /= 2) v = __fadd_rn(v, __shfl_down_sync(0xffffffffu, v, w));
    return __shfl_sync(0xffffffffu, v, 0);
}

// canon_sum_of(n, term) by a warp: lane `lane` adds term(i) for i = lane, lane + 32, ... in
// increasing i, then the tree. Every lane gets the sum. All 32 lanes must call it.
// Eight terms are read before any is added (strided_ahead: the same additions in the same
// order), the last few too: a lane's loads then overlap instead of each waiting for the
// previous one, which made a 4096-wide rms_norm take 50 us on an H200 (and a head of 128,
// four terms a lane, four round trips).
template <class Term> __device__ inline float warp_canon_sum(int64_t n, int lane, Term term) {
    float s = 0.0f;
    strided_ahead(lane, n, kCanonLanes, term, [&](int64_t, float t) { s = __fadd_rn(s, t); });
    return warp_canon_tree(s);
}

// canon_dot(a, b, n) by a warp (each product rounded, then added).
__device__ inline float warp_canon_dot(const float* a, const float* b, int64_t n, int lane) {
    return warp_canon_sum(n, lane, [&](int64_t i) { return __fmul_rn(a[i], b[i]); });
}

// Max over the warp (exact in any order), returned to every lane.
__device__ inline float warp_max(float v) {
    for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
    return v;
}

}  // namespace ls::cuda
