#include "backends/vulkan/ops/type_support.h"
#include "backends/vulkan/ops/vk_ops.h"
#include "core/rules/attention_rule.h"

namespace ls::vk {

bool supports_attention(const Tensor& n) {
    return cache_type(n.src[1]->type) && cache_type(n.src[2]->type) && host_readable(n.src[3]) && host_readable(n.src[4]) &&
           n.src[0]->nb[0] == 4 && n.src[2]->ne[1] == n.src[1]->ne[1];
}

// The queries' ring checks, and the score scratch: keys per query at most, per (t, h).
void plan_attention(const Tensor& n, Plan& plan) {
    const AttentionParams p = n.get_params<AttentionParams>();
    const std::vector<uint8_t> pb = plan.host_bytes(n.src[3]), sb = plan.host_bytes(n.src[4]);
    const auto* pos = reinterpret_cast<const int32_t*>(pb.data());
    const auto* seq = reinterpret_cast<const int32_t*>(sb.data());
    const int64_t T = n.src[0]->ne[2], H = n.src[0]->ne[1], n_seq = n.src[1]->ne[1] / p.ring_rows;
    int64_t keys = 1;
    for (int64_t t = 0; t < T; ++t) {
        check_attention_query(seq[t], pos[t], p.window, p.ring_rows, n_seq);
        keys = std::max(keys, pos[t] - attn_first_key(pos[t], p.window) + 1);
    }
    plan.attn_keys[&n] = uint32_t(keys);
    plan.score_bytes = std::max(plan.score_bytes, size_t(T * H * keys) * 4);
}

void record_attention(const Tensor& n, Recorder& r) {
    const Tensor *a = n.src[0], *k = n.src[1], *v = n.src[2];
    const uint32_t H = uint32_t(a->ne[1]), T = uint32_t(a->ne[2]);
    PcAttention pc{r.addr(a), r.addr(k), r.addr(v), r.addr(n.src[3]), r.addr(n.src[4]), r.addr(&n), r.scores.lo,
                   uint32_t(a->ne[0]), uint32_t(n.ne[0]), H, T, uint32_t(k->type), uint32_t(v->type),
                   uint32_t(k->nb[1]), uint32_t(v->nb[1]), uint32_t(a->nb[1]), uint32_t(a->nb[2]), r.plan.attn_keys.at(&n),
                   n.get_params<AttentionParams>()};
    r.dispatch("attention", pc, H, T, {r.range(a), r.range(k), r.range(v), r.range(n.src[3]), r.range(n.src[4])},
               {r.range(&n), r.scores});
}

}  // namespace ls::vk
