#pragma once
#include "core/ir/op_params.h"
#include "core/models/model.h"

namespace ls {

// NVIDIA Nemotron-H and Nemotron Nano v2 (arch nemotron_h): a stack of single-mixer blocks,
// each an RMS norm, one mixer and a residual add. The mixer is a Mamba-2 layer where the
// per-layer attention.head_count_kv and feed_forward_length are both 0, attention without
// positional encoding where feed_forward_length is 0, and otherwise a squared-ReLU MLP (no
// gate). Mamba-2: ssm_in gives z (d_inner), xBC (d_inner + 2 G N) and dt (H) per token; xBC
// goes through the causal depthwise convolution (conv1d_scan, with its bias) and SiLU, then
// the selective scan (ssm_scan: x in H heads of P = d_inner / H channels, B and C in G groups
// of N) with dt = softplus(dt + dt_bias) and A = ssm_a; D x is added, the result gated by
// silu(z), RMS-normed per group of d_inner / G channels (ssm_norm) and projected by ssm_out.
// Both recurrent states (the convolution's last K - 1 inputs, the scan's H P N floats) are
// per sequence slot, checkpointed like every hybrid's. Tensor names and keys are those of
// llama.cpp's converter. The MoE variant (Nemotron 3 Nano: expert_count) is refused by name.
class NemotronH final : public RecurrentModel {
public:
    Tensor* build_graph(Graph& g, const Ubatch& ub, KvCache& kv, RecurrentMemory* rs) const override;
    std::vector<RecurrentLayerSpec> recurrent_layout() const override;

private:
    void load_arch() override;
    enum class Mixer : uint8_t { Mamba, Attention, Mlp };
    struct Layer {
        Mixer kind;
        Tensor* norm;                                      // (n_embd)
        Tensor *ssm_in, *conv, *conv_b, *dt_b, *A, *D;      // Mamba-2: (n_embd, 2 d_inner + 2 G N + H), (K, C), (C), (H), (1, H), (1, H)
        Tensor *ssm_norm, *ssm_out;                         // (d_inner / G, G), (d_inner, n_embd)
        Tensor *wq, *wk, *wv, *wo;                          // attention
        Tensor *bq, *bk, *bv, *bo;                          // their optional biases
        Tensor *up, *down, *up_b, *down_b;                  // MLP (n_embd, F), (F, n_embd), optional biases
    };
    std::vector<Layer> layers_;
    int64_t d_conv_ = 0, d_inner_ = 0, d_state_ = 0, n_group_ = 0, n_ssm_head_ = 0;
};

}  // namespace ls
