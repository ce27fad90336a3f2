// scale, gelu, silu, sigmoid, softplus, softcap: one shader pattern over contiguous floats,
// with one float parameter (scale's factor, softcap's cap; 0 for the others).
#pragma once
#include "backends/vulkan/recorder.h"

namespace ls::vk {

inline bool supports_unary(const Tensor& n) { return n.src[0]->is_contiguous(); }

inline void record_unary(const Tensor& n, Recorder& r, const char* variant, float s) {
    const Tensor* a = n.src[0];
    PcUnary pc{r.addr(a), r.addr(&n), uint32_t(n.nelements()), s};
    r.dispatch1d(variant, pc, uint64_t(n.nelements()), {r.range(a)}, {r.range(&n)});
}

}  // namespace ls::vk
