// Elementwise loop shared by the unary ops (contiguous tensors).
#pragma once
#include "core/ir/tensor.h"

namespace ls::ref {

template <class F> void unary_map(const Tensor& dst, F f) {
    const float* x = dst.src[0]->data_as<const float>();
    float* y = dst.data_as<float>();
    for (int64_t i = 0, n = dst.nelements(); i < n; ++i) y[i] = f(x[i]);
}

}  // namespace ls::ref
