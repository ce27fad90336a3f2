#pragma once
#include "core/ir/op_params.h"
#include "core/models/model.h"
#include "core/models/moe.h"

namespace ls {

// deepseek2: DeepSeek V2 / V2-Lite / V3 / R1, Kimi K2 (and GLM 4.7 Lite's layout), as
// llama.cpp's converter writes them. Multi-head latent attention in its absorbed form: each
// token's key is its compressed latent (kv_lora_rank values, RMS-normed) beside one shared
// rope part (n_rot values), the value is the latent itself, so the cache holds one row of
// kv_lora_rank + n_rot values per token and layer, V reading K's first kv_lora_rank
// (KvLayerSpec::v_in_k), for all heads (one KV head). A head's query is its no-rope part
// carried into the latent space by attn_k_b (q_nope . W_kb^h), beside its roped part; its
// output, a latent, is carried back out by attn_v_b. The query comes from attn_q, or through
// the low-rank attn_q_a, its norm and attn_q_b (q_lora_rank). Scores are scaled by
// mscale^2 / sqrt(key_length_mla), mscale = 1 + 0.1 mscale_all_dim ln(YaRN factor).
// The first leading_dense_block_count layers have a SwiGLU FFN; the others routed experts
// (MoeRouter: softmax or sigmoid, V3's correction bias and expert groups, renormalised and
// scaled as the metadata says) plus expert_shared_count shared experts, added. An appended
// NextN (multi-token prediction) layer is not run.
class Deepseek2 final : public Model {
public:
    Tensor* build_graph(Graph& g, const Ubatch& ub, KvCache& kv) const override;

private:
    void load_arch() override;
    struct Layer {
        Tensor* attn_norm;
        Tensor *wq, *wq_a, *q_a_norm, *wq_b;  // wq (n_embd, H * Dk), or the low-rank pair with its norm
        Tensor* wkv_a;                        // (n_embd, kv_lora_rank + n_rot)
        Tensor* kv_a_norm;                    // (kv_lora_rank)
        Tensor *wk_b, *wv_b;                  // (nope, kv_lora_rank, H), (kv_lora_rank, Dv, H)
        Tensor* wo;                           // (H * Dv, n_embd)
        Tensor* ffn_norm;
        Tensor *ffn_gate, *ffn_up, *ffn_down;  // dense layers
        Tensor *gate_inp, *probs_b;            // routed layers: router, its correction bias (or null)
        MoeExperts experts;
        Tensor *sh_gate, *sh_up, *sh_down;     // shared experts (null when none)
    };
    std::vector<Layer> layers_;
    RopeParams rope_{};
    int64_t n_head_ = 0, nope_ = 0, n_rot_ = 0, kv_rank_ = 0, hd_v_ = 0;
    MoeRouter router_;
};

}  // namespace ls
