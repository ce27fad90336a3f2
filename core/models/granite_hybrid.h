#pragma once
#include "core/models/model.h"
#include "core/models/moe.h"

namespace ls {

// IBM Granite 4.0-H (arch granitehybrid): each layer an RMS norm, a mixer — Mamba-2 where the
// per-layer attention.head_count_kv is 0 (core/models/mamba2_block.h), attention without
// positional encoding otherwise — its output times residual_scale added to the residual, then
// an RMS-normed FFN whose output, times residual_scale, is added too: a mixture of SwiGLU
// experts (softmax router, top k renormalised) plus a shared SwiGLU expert of
// expert_shared_feed_forward_length, or a dense SwiGLU FFN. Granite's multipliers: embeddings
// times embedding_scale, scores times attention.scale, logits divided by logit_scale.
// Attention with rope (rope.scaling.finetuned true) is refused by name: no such file to check
// it against.
class GraniteHybrid final : public RecurrentModel {
public:
    Tensor* build_graph(Graph& g, const Ubatch& ub, KvCache& kv, RecurrentMemory* rs) const override;
    std::vector<RecurrentLayerSpec> recurrent_layout() const override;

private:
    void load_arch() override;
    struct Layer {
        Tensor *attn_norm, *ffn_norm;
        Mamba2Weights mamba;                  // recurrent layers
        AttnWeights at;                       // attention layers
        Tensor *gate_inp;                     // routed experts, or null (dense: below)
        MoeExperts experts;
        Tensor *sh_gate, *sh_up, *sh_down;    // shared expert, or null
        Tensor *ffn_gate, *ffn_up, *ffn_down; // dense FFN
    };
    std::vector<Layer> layers_;
    Mamba2Sizes ssm_;
    MoeRouter router_;
    float embd_scale_ = 0.f, residual_scale_ = 0.f, logit_scale_ = 0.f;  // 0: absent
};

}  // namespace ls
