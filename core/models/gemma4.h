#pragma once
#include "core/models/model.h"
#include "core/models/moe.h"

namespace ls {

// Gemma 4 (arch gemma4: E2B, E4B, 31B, 26B-A4B), from llama.cpp's GGUF files as they are.
// Against Gemma 3 it differs in data, per layer: sliding or global from a bool array, global
// layers with their own head size and KV head count and proportional RoPE (rope_freqs as
// frequency factors), attention scale 1 (the q/k norms replace it), V through a weightless
// RMS norm and no RoPE (the raw K projection where attn_v is absent), the last
// shared_kv_layers layers computing only Q and attending over the cache of the last earlier
// layer of the same kind. Per-layer embeddings (PLE, E2B/E4B) add a gated per-layer input after
// the FFN; layer_output_scale scales the whole residual stream; the 26B-A4B adds a routed
// GeGLU mixture of experts beside the dense FFN; the logits are soft-capped.
class Gemma4 final : public Model {
public:
    Tensor* build_graph(Graph& g, const Ubatch& ub, KvCache& kv) const override;
    // Images (the gemma4v projector's rows, unscaled). HF's use_bidirectional_attention, which
    // no GGUF key carries, follows the published checkpoints: "vision" (an image's tokens also
    // see their whole image, in sliding layers only) for the models without per-layer
    // embeddings (26B-A4B, 31B); plain causal for those with them (E2B, E4B).
    bool takes_given_rows() const override { return true; }

private:
    void load_arch() override;
    struct Layer {
        Tensor* attn_norm;       // (n_embd)
        Tensor* wq;              // (n_embd, n_head * head_dim)
        Tensor* wk;              // (n_embd, n_head_kv * head_dim): null on KV-shared layers
        Tensor* wv;              // (n_embd, n_head_kv * head_dim): null where V is the raw K
        Tensor* q_norm;          // (head_dim)
        Tensor* k_norm;          // (head_dim): null on KV-shared layers
        Tensor* wo;              // (n_head * head_dim, n_embd)
        Tensor* post_attn_norm;  // (n_embd)
        Tensor* ffn_norm;        // (n_embd)
        Tensor* ffn_gate;        // (n_embd, n_ff)
        Tensor* ffn_up;          // (n_embd, n_ff)
        Tensor* ffn_down;        // (n_ff, n_embd)
        Tensor* post_ffw_norm;   // (n_embd)
        // mixture of experts (26B-A4B), beside the dense FFN above
        Tensor* ffn_gate_inp;    // (n_embd, n_expert): router, or null (no experts in this layer)
        Tensor* router_scale;    // (n_embd): the router input's per-channel scale
        Tensor* expert_scale;    // (n_expert): each chosen expert's weight is multiplied by it, or null
        MoeExperts experts;
        Tensor* pre_ffw_norm_2;  // (n_embd): the experts' input norm
        Tensor* post_ffw_norm_1; // (n_embd): the dense FFN's output norm
        Tensor* post_ffw_norm_2; // (n_embd): the experts' output norm
        // per-layer embeddings (E2B, E4B)
        Tensor* inp_gate;        // (n_embd, n_embd_per_layer)
        Tensor* proj;            // (n_embd_per_layer, n_embd)
        Tensor* post_norm;       // (n_embd)
        Tensor* out_scale;       // (1): layer_output_scale, or null
        int32_t rope_dims;       // rotated dims per head (NEOX)
        bool freq_factors;       // global layers: rope_freqs divides the frequencies
    };
    std::vector<float> rope_freqs_;  // (rope_dims_global / 2): proportional RoPE's factors, or empty
    Tensor* ple_tok_embd_ = nullptr; // (n_layer * n_embd_per_layer, n_vocab)
    Tensor* ple_proj_ = nullptr;     // (n_embd, n_layer * n_embd_per_layer)
    Tensor* ple_proj_norm_ = nullptr;  // (n_embd_per_layer)
    int64_t n_embd_per_layer_ = 0;
    int64_t n_expert_ = 0, n_expert_used_ = 0;
    float final_softcap_ = 0.f;      // 0: none
    std::vector<Layer> layers_;
};

}  // namespace ls
