#pragma once
#include "core/models/model.h"

namespace ls {

// Gemma 3: interleaved sliding-window (5 of every 6 layers) and global attention, per-head
// q/k RMS norms, post-attention and post-FFN norms, GELU-gated FFN, tied output.
class Gemma3 final : public Model {
public:
    Tensor* build_graph(Graph& g, const Ubatch& ub, KvCache& kv) const override;

private:
    void load_arch() override;
    struct Layer {
        Tensor* attn_norm;       // (n_embd)
        Tensor* wq;              // (n_embd, n_head * head_dim)
        Tensor* wk;              // (n_embd, n_head_kv * head_dim)
        Tensor* wv;              // (n_embd, n_head_kv * head_dim)
        Tensor* q_norm;          // (head_dim)
        Tensor* k_norm;          // (head_dim)
        Tensor* wo;              // (n_head * head_dim, n_embd)
        Tensor* post_attn_norm;  // (n_embd)
        Tensor* ffn_norm;        // (n_embd)
        Tensor* ffn_gate;        // (n_embd, n_ff)
        Tensor* ffn_up;          // (n_embd, n_ff)
        Tensor* ffn_down;        // (n_ff, n_embd)
        Tensor* post_ffw_norm;   // (n_embd)
    };
    std::vector<Layer> layers_;
};

}  // namespace ls
