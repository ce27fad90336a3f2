#pragma once
#include "core/models/model.h"

namespace ls {

// Gemma 2 and Gemma 3: sliding-window and global layers interleaved (Gemma 2: every other
// layer slides; Gemma 3: five of every six), norms before and after attention and FFN,
// GELU-gated FFN, embeddings scaled by sqrt(n_embd), tied output. Gemma 2 soft-caps the
// attention scores and the final logits; Gemma 3 has per-head q/k RMS norms instead, and its
// sliding layers rotate with base 10000 and no scaling. What differs is read as data.
// EmbeddingGemma ("gemma-embedding") is Gemma 3 attending both ways, with no output projection,
// and optionally the sentence-transformers Dense projections after pooling (embd_projection()).
class Gemma final : public Model {
public:
    Tensor* build_graph(Graph& g, const Ubatch& ub, KvCache& kv) const override;
    bool takes_given_rows() const override { return true; }

private:
    void load_arch() override;
    void load_dense_projection();  // gemma-embedding's dense_2, dense_3 into embd_proj_
    struct Layer {
        Tensor* attn_norm;       // (n_embd)
        AttnWeights at;          // q, k, v, o (no biases)
        Tensor* q_norm;          // (head_dim), Gemma 3; null in Gemma 2
        Tensor* k_norm;          // (head_dim), Gemma 3; null in Gemma 2
        Tensor* post_attn_norm;  // (n_embd)
        Tensor* ffn_norm;        // (n_embd)
        Tensor* ffn_gate;        // (n_embd, n_ff)
        Tensor* ffn_up;          // (n_embd, n_ff)
        Tensor* ffn_down;        // (n_ff, n_embd)
        Tensor* post_ffw_norm;   // (n_embd)
        bool symmetric;          // EmbeddingGemma's local layers: keys within W / 2 either side
    };
    std::vector<Layer> layers_;
    float attn_softcap_ = 0.f, final_softcap_ = 0.f;  // 0: off (Gemma 3)
    int32_t bidir_reach_ = 0;  // gemma-embedding: W / 2, the reach of its symmetric window; 0: none
};

}  // namespace ls
