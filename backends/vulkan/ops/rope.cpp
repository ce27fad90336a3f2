// The cos/sin tables are made on the host (core/rules/rope_rule.h): a device's double libm
// need not round as the host's.
#include "backends/vulkan/ops/type_support.h"
#include "backends/vulkan/ops/vk_ops.h"
#include "core/rules/rope_rule.h"

namespace ls::vk {

bool supports_rope(const Tensor& n) {
    return n.src[0]->nb[0] == 4 && host_readable(n.src[1]) && (!n.src[2] || host_readable(n.src[2]));
}

void plan_rope(const Tensor& n, Plan& plan) {
    const RopeParams p = n.get_params<RopeParams>();
    auto key = std::make_tuple(n.src[1], n.src[2], p.n_dims, p.mode, p.freq_base, p.freq_scale, p.ext_factor, p.attn_factor, p.corr_lo,
                               p.corr_hi);
    if (auto it = plan.rope_dedup.find(key); it != plan.rope_dedup.end()) {
        plan.rope_off[&n] = it->second;
        return;
    }
    const std::vector<uint8_t> pb = plan.host_bytes(n.src[1]);
    std::vector<uint8_t> fb;
    if (n.src[2]) fb = plan.host_bytes(n.src[2]);
    const auto* pos = reinterpret_cast<const int32_t*>(pb.data());
    const auto* ff = n.src[2] ? reinterpret_cast<const float*>(fb.data()) : nullptr;
    const size_t off = plan.rope_tables.size();
    // (t, i) in order: the table is T rows of n_dims/2 (cos, sin) pairs.
    rope_angles(pos, n.src[0]->ne[2], p, ff, [&](int64_t, int64_t, float c, float s) {
        plan.rope_tables.push_back(c);
        plan.rope_tables.push_back(s);
    });
    plan.rope_dedup[key] = off;
    plan.rope_off[&n] = off;
}

void record_rope(const Tensor& n, Recorder& r) {
    const Tensor* a = n.src[0];
    const RopeParams p = n.get_params<RopeParams>();
    const uint64_t cs = r.rope_base + r.plan.rope_off.at(&n) * 4;
    const uint32_t D = uint32_t(a->ne[0]), H = uint32_t(a->ne[1]), T = uint32_t(a->ne[2]);
    PcRope pc{r.addr(a), cs, r.addr(&n), D, H, T, uint32_t(a->nb[1]), uint32_t(a->nb[2]), 0, p};
    const uint64_t per_head = uint64_t(p.n_dims / 2) + (D - uint32_t(p.n_dims));
    r.dispatch1d("rope", pc, per_head * H * T, {r.range(a)}, {r.range(&n)});
}

}  // namespace ls::vk
