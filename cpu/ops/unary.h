// Elementwise loop shared by the unary ops: f is applied to xsimd batches and to scalars.
#pragma once
#include <tbb/parallel_for.h>

#include "cpu/simd.h"
#include "core/ir/tensor.h"

namespace ls::cpu {

template <class F> void unary_map(const Tensor& dst, F f) {
    const float* x = dst.src[0]->data_as<const float>();
    float* y = dst.data_as<float>();
    const int64_t n = dst.nelements(), chunk = 4096;
    tbb::parallel_for(int64_t(0), (n + chunk - 1) / chunk, [&](int64_t c) {
        int64_t i = c * chunk;
        const int64_t end = std::min(n, i + chunk);
        for (; i + simd::W <= end; i += simd::W) f(simd::fbatch::load_unaligned(x + i)).store_unaligned(y + i);
        for (; i < end; ++i) y[i] = f(x[i]);
    });
}

}  // namespace ls::cpu
