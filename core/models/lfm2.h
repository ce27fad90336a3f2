#pragma once
#include "core/models/model.h"

namespace ls {

// Liquid's LFM2 (arch lfm2): short-convolution blocks beside GQA attention blocks, a SwiGLU
// FFN on every layer, RMS norms before each (operator_norm, ffn_norm) and one at the end
// (token_embd_norm). A layer whose attention.head_count_kv entry is 0 is a convolution block:
// in_proj gives B, C and x (n_embd rows each, in that order), B * x goes through a causal
// depthwise convolution of shortconv.l_cache taps (conv1d_scan: its last l_cache - 1 inputs
// are the sequence's recurrent state, checkpointed like the hybrids' scans), C times its
// output through out_proj. Attention blocks norm q and k per head (RMS) before NeoX rope.
// Tensor names and keys are those of llama.cpp's converter. Not built here, and refused by
// name: the sliding-window variant and LFM2's MoE (arch lfm2moe, not registered).
class Lfm2 final : public RecurrentModel {
public:
    Tensor* build_graph(Graph& g, const Ubatch& ub, KvCache& kv, RecurrentMemory* rs) const override;
    std::vector<RecurrentLayerSpec> recurrent_layout() const override;

private:
    void load_arch() override;
    struct Layer {
        Tensor *attn_norm, *ffn_norm;        // (n_embd)
        Tensor *wq, *wk, *wv, *wo;           // attention blocks
        Tensor *q_norm, *k_norm;             // (head_dim)
        Tensor *in_proj, *conv, *out_proj;   // convolution blocks: (n_embd, 3 n_embd), (l_cache, n_embd), (n_embd, n_embd)
        Tensor *ffn_gate, *ffn_up, *ffn_down;
    };
    std::vector<Layer> layers_;
    int64_t l_cache_ = 0;
    RopeParams rope_{};
};

}  // namespace ls
