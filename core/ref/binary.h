// Broadcasting elementwise loop shared by add and mul.
#pragma once
#include "core/ir/tensor.h"

namespace ls::ref {

template <class F> void broadcast_binary(const Tensor& dst, F f) {
    const Tensor& a = *dst.src[0];
    const Tensor& b = *dst.src[1];
    for (int64_t i3 = 0; i3 < a.ne[3]; ++i3)
        for (int64_t i2 = 0; i2 < a.ne[2]; ++i2)
            for (int64_t i1 = 0; i1 < a.ne[1]; ++i1) {
                const float* pa = reinterpret_cast<const float*>(a.row(i1, i2, i3));
                const float* pb = reinterpret_cast<const float*>(b.row(i1 % b.ne[1], i2 % b.ne[2], i3 % b.ne[3]));
                float* pd = reinterpret_cast<float*>(dst.row(i1, i2, i3));
                for (int64_t i0 = 0; i0 < a.ne[0]; ++i0) pd[i0] = f(pa[i0], pb[i0 % b.ne[0]]);
            }
}

}  // namespace ls::ref
