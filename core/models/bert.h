#pragma once
#include "core/models/model.h"

namespace ls {

// BERT-style encoders, as GGUF files name them: "bert" (all-MiniLM, bge, e5: learned absolute
// positions, GELU FFN, biases everywhere) and "nomic-bert" (nomic-embed-text: rotary positions,
// SwiGLU FFN, fused QKV, no biases). Both: token (+ token type 0) embeddings, a LayerNorm,
// then post-norm layers x = LN(x + attn(x)); x = LN(x + ffn(x)) with non-causal attention over
// the whole sequence (Hparams::causal = false), no output projection: the last LayerNorm's
// states are what the embedding pools (<arch>.pooling_type, mean or CLS).
class Bert final : public Model {
public:
    Tensor* build_graph(Graph& g, const Ubatch& ub, KvCache& kv) const override;

private:
    void load_arch() override;
    struct Norm {
        Tensor* w;  // (n_embd)
        Tensor* b;  // (n_embd)
    };
    // LayerNorm: (x - mean) / sqrt(var + eps) * w + b (the layer_norm op).
    Tensor* layer_norm(Graph& g, Tensor* x, const Norm& n) const;
    struct Layer {
        Tensor* wqkv = nullptr;  // (n_embd, 3 * n_embd), or null: wq, wk, wv in `at`
        Tensor* bqkv = nullptr;  // (3 * n_embd) or null
        AttnWeights at{};        // wo (and bo) always; wq, wk, wv (and biases) when not fused
        Norm attn_out_norm{};
        Tensor* ffn_up = nullptr;    // (n_embd, n_ff)
        Tensor* ffn_up_b = nullptr;  // (n_ff), bert
        Tensor* ffn_gate = nullptr;  // (n_embd, n_ff), nomic-bert (SwiGLU)
        Tensor* ffn_down = nullptr;  // (n_ff, n_embd)
        Tensor* ffn_down_b = nullptr;  // (n_embd), bert
        Norm layer_out_norm{};
    };
    std::vector<Layer> layers_;
    Tensor* type_embd_ = nullptr;  // (n_embd, n_types) or null: row 0 ("sentence A") is added
    Tensor* pos_embd_ = nullptr;   // (n_embd, n_ctx_train), bert; null: rotary (nomic-bert)
    Norm embd_norm_{};
    bool rope_ = false;
    float rope_base_ = 10000.f;
    float ln_eps_ = 1e-12f;
    std::vector<float> zeros_;  // n_embd: a copy's addend
    static constexpr int32_t kZero = 0;
};

}  // namespace ls
