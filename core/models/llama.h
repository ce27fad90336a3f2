#pragma once
#include "core/ir/op_params.h"
#include "core/models/model.h"
#include "core/models/moe.h"

namespace ls {

// What distinguishes the families this class builds; the registry gives one per architecture.
enum class QkNorm : uint8_t {
    None,
    PerHead,  // qwen3: each head's q and k RMS-normed (a head_dim weight)
    PerHeadIfPresent,  // glm4moe: as PerHead where the file has the norms (its use_qk_norm)
    Whole,    // olmo2: q and k RMS-normed over the whole projection (n_head * head_dim weights)
};
struct LlamaFlavor {
    int32_t rope_mode;  // llama: interleaved pairs (the converter permuted Q/K for it); qwen3: NeoX halves
    QkNorm qk_norm;     // before rope
    bool post_norm;     // olmo2: no norm before attention and FFN; each one's output RMS-normed before the residual add
};

// The plain decoder: llama (Llama 2/3.x, Mistral, SmolLM), qwen2 (biases on q, k and v),
// qwen3, qwen3moe, granite and granitemoe (IBM Granite 3: its four multipliers, below), olmo2 (OLMo 2:
// norms after attention and FFN instead of before, q/k norms over the whole projection) and
// mistral3 (Ministral 3, Mistral Small 3.x: YaRN and Llama 4's attention temperature),
// phi3 (Phi-3, Phi-4: q, k and v in one matrix, gate and up in one, partial rope) and glm4moe
// (GLM-4.5/4.6/4.7: q/k/v biases, partial NeoX rope, optional per-head q/k norms, routed and
// shared experts).
// RMS norm, attention with GQA, rope (linear, YaRN, or Llama 3's per-pair divisors from
// rope_freqs.weight), optional sliding window (Mistral-style, every layer), optional biases;
// SwiGLU FFN (optional biases) or a mixture of SwiGLU experts (MoeRouter: softmax, or
// glm4moe's sigmoid with a selection bias, renormalised and scaled as the metadata says),
// after leading_dense_block_count dense layers, with expert_shared_count shared experts
// added; tied or separate output; an appended NextN layer (glm4moe) is not run. Granite's multipliers, read
// from the metadata wherever a file has them: the embeddings scaled by embedding_scale, each
// branch's output by residual_scale before the residual add, the logits divided by
// logit_scale (the attention's own scale is attention.scale, as every family reads it).
// qwen3vl and qwen3vlmoe (Qwen3-VL's text side): qwen3 / qwen3moe with interleaved M-RoPE
// (rope.dimension_sections) and deepstack rows added after the first n_deepstack_layers layers.
class Llama final : public Model {
public:
    explicit Llama(LlamaFlavor f) : flavor_(f) {}
    Tensor* build_graph(Graph& g, const Ubatch& ub, KvCache& kv) const override;
    // Qwen3-VL (qwen3vl, qwen3vlmoe): an image's rows in place of its tokens, M-RoPE positions.
    bool takes_given_rows() const override { return !mrope_axes_.empty(); }
    int rope_axes() const override { return mrope_axes_.empty() ? 1 : 3; }

private:
    void load_arch() override;
    Tensor* ffn(Graph& g, Tensor* h, int64_t il) const;
    struct Layer {
        Tensor* attn_norm;                   // (n_embd), or null (post_norm)
        AttnWeights at;                      // q, k, v, o and optional biases (q, k, v null when fused:)
        Tensor* wqkv;                        // phi3: (n_embd, (n_head + 2 n_head_kv) * head_dim): q rows, k rows, v rows
        Tensor *q_norm, *k_norm;             // (head_dim) per head, or (n_head[_kv] * head_dim) whole; or null
        Tensor* ffn_norm;                    // (n_embd), or null (post_norm)
        Tensor *attn_post_norm, *ffn_post_norm;  // (n_embd), post_norm only
        Tensor *ffn_gate, *ffn_up, *ffn_down;  // dense: (n_embd, n_ff), (n_embd, n_ff), (n_ff, n_embd); phi3: no
                                               // ffn_gate, ffn_up (n_embd, 2 n_ff): gate rows, then up rows
        Tensor *ffn_gate_b, *ffn_up_b, *ffn_down_b;  // their optional biases
        Tensor* ffn_gate_inp;                // MoE router (n_embd, n_expert), or null
        Tensor* exp_probs_b;                 // its selection bias (glm4moe), or null
        MoeExperts experts;
        Tensor *sh_gate, *sh_up, *sh_down;   // shared experts (glm4moe), or null
    };
    LlamaFlavor flavor_;
    std::vector<Layer> layers_;
    RopeParams rope_{};
    std::vector<float> rope_freqs_;  // (n_rot / 2) Llama 3 divisors, or empty
    // LongRoPE (phi3): the divisors for contexts up to longrope_orig_ctx_ and beyond, or empty
    std::vector<float> short_factors_, long_factors_;
    int64_t longrope_orig_ctx_ = 0;
    int64_t n_expert_ = 0;
    MoeRouter router_;
    float embd_scale_ = 0.f, residual_scale_ = 0.f, logit_scale_ = 0.f;  // 0: absent (granite's multipliers)
    // Llama 4's attention temperature (Ministral 3, attention.temperature_scale): queries after
    // rope times 1 + beta log(1 + floor(pos / temp_floor_)); beta 0: none.
    float temp_beta_ = 0.f;
    int64_t temp_floor_ = 0;
    // Qwen3-VL: interleaved M-RoPE (per rope pair its axis: 0 time, 1 height, 2 width; empty:
    // plain rope), and the deepstack: an image token's given row holds 1 + n_deepstack_ rows of
    // n_embd, the first its input, row d + 1 added to its hidden state after layer d.
    std::vector<int32_t> mrope_axes_;
    int64_t n_deepstack_ = 0;
};

}  // namespace ls
