// add and mul: one shader pattern (shaders/add.comp, shaders/mul.comp), b broadcast over a.
#pragma once
#include "backends/vulkan/recorder.h"

namespace ls::vk {

inline bool supports_binary(const Tensor& n) { return n.src[0]->nb[0] == 4 && n.src[1]->nb[0] == 4; }

inline void record_binary(const Tensor& n, Recorder& r, const char* variant) {
    const Tensor *a = n.src[0], *b = n.src[1];
    PcBinary pc{r.addr(a), r.addr(b), r.addr(&n),
                uint32_t(a->ne[0]), uint32_t(a->ne[1]), uint32_t(a->ne[2]), uint32_t(a->ne[3]),
                uint32_t(b->ne[0]), uint32_t(b->ne[1]), uint32_t(b->ne[2]), uint32_t(b->ne[3]),
                uint32_t(a->nb[1]), uint32_t(a->nb[2]), uint32_t(a->nb[3]),
                uint32_t(b->nb[1]), uint32_t(b->nb[2]), uint32_t(b->nb[3])};
    r.dispatch1d(variant, pc, uint64_t(n.nelements()), {r.range(a), r.range(b)}, {r.range(&n)});
}

}  // namespace ls::vk
