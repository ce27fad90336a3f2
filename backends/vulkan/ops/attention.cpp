#include <string>
#include <vector>

#include "backends/vulkan/ops/mul_mat_act.h"
#include "backends/vulkan/ops/type_support.h"
#include "backends/vulkan/ops/vk_ops.h"
#include "core/rules/attention_rule.h"

namespace ls::vk {

// Key heads up to 576 (MLA's latent and rope part; shaders/attention.comp MAXDK: q in shared
// memory), value heads up to 512 (MAXDV: 8 outputs per invocation).
// Sinks (src[5]): a contiguous F32 [H] read by the shaders at the head's index.
bool supports_attention(const Tensor& n) {
    return cache_type(n.src[1]->type) && cache_type(n.src[2]->type) && is_index_input(n.src[3]) && is_index_input(n.src[4]) &&
           n.src[0]->nb[0] == 4 && n.src[2]->ne[1] == n.src[1]->ne[1] && n.src[0]->ne[0] <= 576 && n.ne[0] <= 512 &&
           (!n.src[5] || (n.src[5]->type == DType::F32 && n.src[5]->is_contiguous()));
}

// The key blocks a query spans at most; whether to split: few
// (query, head) pairs over several key blocks (decode) spread their blocks over workgroups,
// whose partials (m, l, o[Dv]) go to the aux buffer for the fold pass. Many pairs (prompts)
// fill the device as they are, one workgroup per pair walking its blocks.
void plan_attention(const Tensor& n, Plan& plan) {
    const AttentionParams p = n.get_params<AttentionParams>();
    // Positions and sequences: graph inputs core has checked (check_index_inputs).
    const int32_t* pos = index_data<int32_t>(*plan.graph, n.src[3], "attention");
    const int32_t* seq = index_data<int32_t>(*plan.graph, n.src[4], "attention");
    const int64_t T = n.src[0]->ne[2], H = n.src[0]->ne[1], Dv = n.ne[0];
    int64_t nblk = 1;
    for (int64_t t = 0; t < T; ++t)
        nblk = std::max(nblk, attn_block_of(pos[t]) - attn_block_of(attn_first_of(pos, t, T, p.window)) + 1);
    // The query-tile form: prompt ubatches (8 queries or more) whose tiles of 64 queries each
    // hold one sequence, K and V of one type, head sizes up to 256 (even, on rows of whole
    // words, for the 16-bit types read a word at a time).
    const Tensor *k = n.src[1], *v = n.src[2];
    const int64_t Dk = n.src[0]->ne[0];
    bool tile = plan.attn_tile && T >= 8 && k->type == v->type && Dk <= 256 && Dv <= 256 && Dk % 2 == 0 &&
                Dv % 2 == 0 && k->nb[1] % 4 == 0 && v->nb[1] % 4 == 0;
    for (int64_t t = 0; tile && t < T; ++t) tile = seq[t] == seq[t - t % 64];
    if (tile) {
        plan.attn[&n] = {uint32_t(nblk), false, true};
        return;
    }
    const size_t part_bytes = size_t(T * H * nblk * (Dv + 2)) * 4;
    bool split = nblk >= 2 && T * H < 256 && part_bytes <= (size_t(256) << 20) && T * H * nblk <= 65535;
    if (plan.attn_split >= 0) split = plan.attn_split == 1 && nblk >= 2 && H * nblk <= 65535;
    plan.attn[&n] = {uint32_t(nblk), split};
    if (split) plan.attn_bytes = std::max(plan.attn_bytes, part_bytes);
}

namespace {
// The split form's fold (shaders/attention_fold.comp); at: F32, or the type it quantizes the
// output to for the mul_mat reading x.
void record_fold(const Tensor& n, Recorder& r, const Tensor* x, DType at) {
    const Tensor *a = n.src[0], *sinks = n.src[5];
    const uint32_t H = uint32_t(a->ne[1]), T = uint32_t(a->ne[2]), Dv = uint32_t(n.ne[0]);
    const uint32_t act_nb1 = at == DType::F32 ? 0 : uint32_t(act_row_bytes(at, int64_t(Dv) * H));
    PcAttnFold pf{r.addr(n.src[3]), r.attn.lo, sinks ? r.addr(sinks) : 0, r.addr(&n), r.act.lo, Dv, H, T,
                  r.plan.attn.at(&n).nblk, act_nb1, n.get_params<AttentionParams>().window};
    std::vector<Range> out{r.range(&n)};
    if (at != DType::F32) out.push_back(act_range(r, act_nb1, T));
    r.dispatch(at == DType::F32 ? std::string("attention_fold") : "attention_fold_" + lower_name(at), pf, H, T,
               std::vector<Range>{r.attn, r.range(n.src[3]), r.range(sinks ? sinks : a)}, out);
    if (at != DType::F32) r.act_x = x, r.act_t = at;
}

// The key-block pass (everything but the fold where the node runs split); false where the
// fold is still to be recorded.
bool record_blocks(const Tensor& n, Recorder& r) {
    const Tensor *a = n.src[0], *k = n.src[1], *v = n.src[2];
    const uint32_t H = uint32_t(a->ne[1]), T = uint32_t(a->ne[2]);
    const AttnPlan ap = r.plan.attn.at(&n);
    const Tensor* sinks = n.src[5];
    PcAttention pc{r.addr(a), r.addr(k), r.addr(v), r.addr(n.src[3]), r.addr(n.src[4]), r.addr(&n), ap.split ? r.attn.lo : 0,
                   sinks ? r.addr(sinks) : 0, uint32_t(a->ne[0]), uint32_t(n.ne[0]), H, T,
                   uint32_t(k->type) | uint32_t(v->type) << 16, uint32_t(k->nb[1]), uint32_t(v->nb[1]), uint32_t(a->nb[1]),
                   uint32_t(a->nb[2]), ap.nblk, n.get_params<AttentionParams>()};
    // (No sinks: q's range stands in for theirs.)
    const std::initializer_list<Range> reads = {r.range(a), r.range(k), r.range(v), r.range(n.src[3]), r.range(n.src[4]),
                                                r.range(sinks ? sinks : a)};
    if (ap.tile && r.addr(k) % 4 == 0 && r.addr(v) % 4 == 0) {
        r.dispatch("attention_tile_" + lower_name(k->type), pc, H, (T + 63) / 64, reads, {r.range(&n)});
        return true;
    }
    // K and V of one cache type: the variant with that type compiled in (shaders/attention.comp).
    const std::string variant = k->type == v->type ? "attention_" + lower_name(k->type) : "attention";
    if (!ap.split) {
        r.dispatch(variant, pc, H, T, reads, {r.range(&n)});
        return true;
    }
    r.dispatch(variant, pc, H * ap.nblk, T, reads, {r.attn});
    return false;
}
}  // namespace

void record_attention(const Tensor& n, Recorder& r) {
    if (!record_blocks(n, r)) record_fold(n, r, nullptr, DType::F32);
}

bool record_attention_act(const Tensor& n, const Tensor* x, DType at, Recorder& r) {
    const AttnPlan ap = r.plan.attn.at(&n);
    if (!ap.split || ap.tile) return false;  // record_blocks leaves the fold to record
    record_blocks(n, r);
    record_fold(n, r, x, at);
    return true;
}

}  // namespace ls::vk
