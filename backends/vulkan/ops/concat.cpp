#include "backends/vulkan/ops/vk_ops.h"

namespace ls::vk {

bool supports_concat(const Tensor& n) { return n.is_contiguous(); }

void plan_concat(const Tensor&, Plan&) {}

void record_concat(const Tensor& n, Recorder& r) {
    const Tensor *a = n.src[0], *b = n.src[1];
    const Tensor* bb = b ? b : a;
    PcConcat pc{r.addr(a),         r.addr(bb),          r.addr(&n),           uint32_t(a->ne[0]),   uint32_t(b ? b->ne[0] : 0),
                uint32_t(n.ne[1]), uint32_t(n.nelements()), uint32_t(a->nb[1]), uint32_t(a->nb[2]), uint32_t(bb->nb[1]),
                uint32_t(bb->nb[2])};
    if (b) r.dispatch1d("concat", pc, uint64_t(n.nelements()), {r.range(a), r.range(b)}, {r.range(&n)});
    else r.dispatch1d("concat", pc, uint64_t(n.nelements()), {r.range(a)}, {r.range(&n)});
}

}  // namespace ls::vk
