// The routed-experts part of a mixture-of-experts FFN, shared by the models that have one.
#pragma once
#include "core/ir/graph.h"
#include "core/ir/ops.h"
#include "core/models/arch_keys.h"

namespace ls {

// The experts' gated activation: SwiGLU, GeGLU, or gpt-oss's clamped SwiGLU:
// min(g, limit) * sigmoid(alpha * min(g, limit)) * (clamp(u, -limit, limit) + 1).
enum class MoeAct { Silu, Gelu, SwigluOai };

struct MoeExperts {
    Tensor* gate = nullptr;     // (n_embd, F, n_expert), or null when fused:
    Tensor* up = nullptr;       // (n_embd, F, n_expert)
    Tensor* gate_up = nullptr;  // (n_embd, 2F, n_expert): gate rows, then up rows
    Tensor* down = nullptr;     // (F, n_embd, n_expert)
    int64_t n_ff = 0;           // F
    MoeAct act = MoeAct::Silu;
    // Per-expert biases (gpt-oss), F32 or null: gate and up (F, n_expert), down (n_embd, n_expert).
    Tensor *gate_b = nullptr, *up_b = nullptr, *down_b = nullptr;
    float alpha = 1.702f, limit = 7.0f;  // SwigluOai
};

// The softmax router every softmax-routed family runs: softmax over the experts' logits
// (n_expert, T), the k most probable (ids I32 [k, T]), and their probabilities (wts F32 [k, T]),
// renormalised to sum 1 when `renorm` (the metadata's expert_weights_norm).
struct MoeRoute {
    Tensor* ids;
    Tensor* wts;
};
MoeRoute softmax_topk(Graph& g, Tensor* logits, int k, bool renorm);

// The router of the DeepSeek-style families (deepseek2, glm4moe), as the metadata describes it
// (llama.cpp's expert_gating_func: 1 softmax, 2 sigmoid): scores = gating(logits); the
// selection reads scores + probs_bias (exp_probs_b, DeepSeek V3's correction bias, when
// present) under TopkParams' groups (V3: a group scored by its two best; V2: by its best);
// the weights are the unbiased scores of the chosen experts, divided by their sum when norm,
// times scale.
enum class MoeGating : int32_t { Softmax = 1, Sigmoid = 2 };
struct MoeRouter {
    MoeGating gating = MoeGating::Softmax;
    int k = 0;
    bool norm = false;
    float scale = 1.0f;  // expert_weights_scale (routed_scaling_factor); 0 or 1: none
    ops::TopkGroups groups;
};
// The router's settings from `arch`'s metadata (expert_used_count, expert_gating_func
// (default: softmax), expert_weights_norm, expert_weights_scale, expert_group_count /
// expert_group_used_count), checked against n_expert; what is broken throws naming the key.
MoeRouter read_moe_router(const ArchKeys& keys, int64_t n_expert, bool norm_default);
// gate_inp (n_embd, n_expert), probs_bias (n_expert) or null; h F32 [n_embd, T].
MoeRoute route_experts(Graph& g, const MoeRouter& r, Tensor* gate_inp, Tensor* probs_bias, Tensor* h);

// sum_j wts[j, t] * down_e(act(gate_e x_t) * up_e x_t) over the k experts e = ids[j, t] chosen
// for token t, summed in selection order. x F32 [n_embd, T], ids I32 [k, T], wts F32 [k, T]
// -> F32 [n_embd, T].
Tensor* moe_experts(Graph& g, const MoeExperts& w, Tensor* x, Tensor* ids, Tensor* wts);

}  // namespace ls
