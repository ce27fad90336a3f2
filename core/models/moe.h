// The routed-experts part of a mixture-of-experts FFN, shared by the models that have one.
#pragma once
#include "core/ir/graph.h"

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

// sum_j wts[j, t] * down_e(act(gate_e x_t) * up_e x_t) over the k experts e = ids[j, t] chosen
// for token t, summed in selection order. x F32 [n_embd, T], ids I32 [k, T], wts F32 [k, T]
// -> F32 [n_embd, T].
Tensor* moe_experts(Graph& g, const MoeExperts& w, Tensor* x, Tensor* ids, Tensor* wts);

}  // namespace ls
