// Elementwise loop over a scalar function (deterministic math from core/detmath.h),
// parallel over chunks; the compiler vectorizes the inlined function.
#pragma once
#include <tbb/parallel_for.h>

#include <algorithm>

#include "core/tensor.h"

namespace ls::cpu {

template <class F> void scalar_map(const Tensor& dst, F f) {
    const float* x = dst.src[0]->data_as<const float>();
    float* y = dst.data_as<float>();
    const int64_t n = dst.nelements(), chunk = 8192;
    tbb::parallel_for(int64_t(0), (n + chunk - 1) / chunk, [&](int64_t c) {
        const int64_t end = std::min(n, (c + 1) * chunk);
        for (int64_t i = c * chunk; i < end; ++i) y[i] = f(x[i]);
    });
}

}  // namespace ls::cpu
