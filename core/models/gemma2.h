#pragma once
#include "core/models/model.h"

namespace ls {

// Gemma 2: sliding-window and global layers alternating (the first of each pair slides),
// attention-logit and final-logit soft-caps, norms before and after both attention and FFN,
// GELU-gated FFN, embeddings scaled by sqrt(n_embd), tied output.
class Gemma2 final : public Model {
public:
    Tensor* build_graph(Graph& g, const Ubatch& ub, KvCache& kv) const override;

private:
    void load_arch() override;
    struct Layer {
        Tensor* attn_norm;       // (n_embd)
        Tensor* wq;              // (n_embd, n_head * head_dim)
        Tensor* wk;              // (n_embd, n_head_kv * head_dim)
        Tensor* wv;              // (n_embd, n_head_kv * head_dim)
        Tensor* wo;              // (n_head * head_dim, n_embd)
        Tensor* post_attn_norm;  // (n_embd)
        Tensor* ffn_norm;        // (n_embd)
        Tensor* ffn_gate;        // (n_embd, n_ff)
        Tensor* ffn_up;          // (n_embd, n_ff)
        Tensor* ffn_down;        // (n_ff, n_embd)
        Tensor* post_ffw_norm;   // (n_embd)
    };
    std::vector<Layer> layers_;
    float attn_softcap_ = 0.f, final_softcap_ = 0.f;
};

}  // namespace ls
