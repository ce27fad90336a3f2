// Broadcasting elementwise loop shared by add and mul, vectorized along rows.
#pragma once
#include <tbb/parallel_for.h>

#include "cpu/simd.h"
#include "core/ir/tensor.h"

namespace ls::cpu {

template <class F> void broadcast_binary(const Tensor& dst, F f) {
    const Tensor& a = *dst.src[0];
    const Tensor& b = *dst.src[1];
    const int64_t K = a.ne[0];
    tbb::parallel_for(int64_t(0), a.nrows(), [&](int64_t r) {
        const int64_t i1 = r % a.ne[1], i2 = (r / a.ne[1]) % a.ne[2], i3 = r / (a.ne[1] * a.ne[2]);
        const float* pa = reinterpret_cast<const float*>(a.row(i1, i2, i3));
        const float* pb = reinterpret_cast<const float*>(b.row(i1 % b.ne[1], i2 % b.ne[2], i3 % b.ne[3]));
        float* pd = reinterpret_cast<float*>(dst.row(i1, i2, i3));
        int64_t i = 0;
        if (b.ne[0] == K)
            for (; i + simd::W <= K; i += simd::W)
                f(simd::fbatch::load_unaligned(pa + i), simd::fbatch::load_unaligned(pb + i)).store_unaligned(pd + i);
        for (; i < K; ++i) pd[i] = f(pa[i], pb[i % b.ne[0]]);
    });
}

}  // namespace ls::cpu
