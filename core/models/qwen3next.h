#pragma once
#include "core/models/model.h"
#include "core/ir/op_params.h"

namespace ls {

// The Qwen3 hybrids, Qwen3-Next (arch qwen3next) and Qwen3.5 (qwen35): Gated DeltaNet layers
// interleaved with gated full-attention layers (every full_attention_interval-th layer), SwiGLU
// FFN. Tensor names and transforms are those of llama.cpp's converter: RMSNorm weights carry the
// +1 already (not ssm_norm), ssm_a = -exp(A_log), q and its output gate interleaved per head in
// attn_q. What differs is data: qwen3next keeps value heads grouped by key head (value head h
// reads key head h / (Hv/Hk)) and stores beta and alpha in one ssm_ba projection, per key-head
// group [b (Hv/Hk), a (Hv/Hk)]; qwen35's converter reorders value heads tiled (h reads h % Hk)
// and stores ssm_beta and ssm_alpha apart. qwen35moe is qwen35 with a mixture-of-experts FFN
// (as published Qwen3-Next files are): softmax router, top-k experts renormalised, SwiGLU
// experts (ffn_{gate,up,down}_exps or a fused ffn_gate_up_exps), plus a shared expert
// scaled by sigmoid(ffn_gate_inp_shexp . x).
class Qwen3Hybrid final : public RecurrentModel {
public:
    // Which key head a value head reads differs by file layout (the registry's rows say):
    // qwen3next groups them, qwen35's converter reorders them so that they tile.
    explicit Qwen3Hybrid(DeltaHeadMap head_map) : head_map_(head_map) {}
    Tensor* build_graph(Graph& g, const Ubatch& ub, KvCache& kv, RecurrentMemory* rs) const override;
    std::vector<RecurrentLayerSpec> recurrent_layout() const override;
    // Qwen3.5 takes images (Qwen-VL's vision rows, causal like text) at M-RoPE positions.
    bool takes_given_rows() const override { return !mrope_axes_.empty(); }
    int rope_axes() const override { return mrope_axes_.empty() ? 1 : 3; }

private:
    void load_arch() override;
    struct Layer {
        Tensor* attn_norm;       // (n_embd)
        Tensor* post_attn_norm;  // (n_embd)
        // full attention
        Tensor* wq;              // (n_embd, n_head * head_dim * 2): per head, query rows then gate rows
        Tensor* wk;              // (n_embd, n_head_kv * head_dim)
        Tensor* wv;              // (n_embd, n_head_kv * head_dim)
        Tensor* q_norm;          // (head_dim)
        Tensor* k_norm;          // (head_dim)
        Tensor* wo;              // (n_head * head_dim, n_embd)
        // gated delta net
        Tensor* wqkv;            // (n_embd, 2 * Hk * Dk + Hv * Dv)
        Tensor* wgate;           // (n_embd, Hv * Dv): z
        Tensor* conv1d;          // (d_conv, 2 * Hk * Dk + Hv * Dv), f32
        Tensor* dt_bias;         // (Hv)
        Tensor* ssm_a;           // (Hv): -exp(A_log)
        Tensor* ssm_beta;        // (n_embd, Hv)       qwen35
        Tensor* ssm_alpha;       // (n_embd, Hv)       qwen35
        Tensor* ssm_ba;          // (n_embd, 2 * Hv)   qwen3next: per key head [b (Hv/Hk), a (Hv/Hk)]
        Tensor* ssm_norm;        // (Dv)
        Tensor* ssm_out;         // (Hv * Dv, n_embd)
        // FFN, dense
        Tensor* ffn_gate;        // (n_embd, n_ff)
        Tensor* ffn_up;          // (n_embd, n_ff)
        Tensor* ffn_down;        // (n_ff, n_embd)
        // FFN, mixture of experts (ffn_gate_inp set)
        Tensor* ffn_gate_inp;    // (n_embd, n_expert): router
        Tensor* ffn_gate_exps;   // (n_embd, n_ff_exp, n_expert), or null when fused:
        Tensor* ffn_up_exps;     // (n_embd, n_ff_exp, n_expert)
        Tensor* ffn_gate_up_exps;  // (n_embd, 2 * n_ff_exp, n_expert): gate rows, then up rows
        Tensor* ffn_down_exps;   // (n_ff_exp, n_embd, n_expert)
        Tensor* ffn_gate_inp_shexp;  // (n_embd): shared expert's gate, or null without one
        Tensor* ffn_gate_shexp;  // (n_embd, n_ff_shexp)
        Tensor* ffn_up_shexp;    // (n_embd, n_ff_shexp)
        Tensor* ffn_down_shexp;  // (n_ff_shexp, n_embd)
    };
    Tensor* moe_ffn(Graph& g, const Layer& w, Tensor* h) const;
    int64_t n_expert_ = 0, n_expert_used_ = 0, n_ff_exp_ = 0, n_ff_shexp_ = 0;
    bool expert_norm_ = true;  // expert_weights_norm: the selected weights divided by their sum
    int32_t head_map_;  // DeltaHeadMap
    int64_t d_conv_ = 0, n_k_heads_ = 0, d_k_ = 0, n_v_heads_ = 0, d_v_ = 0, n_rot_ = 0;
    std::vector<Layer> layers_;
    std::vector<int32_t> mrope_axes_;  // per rope pair its axis (0 time, 1 height, 2 width); empty: plain rope
};

}  // namespace ls
