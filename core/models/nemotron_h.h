#pragma once
#include "core/ir/op_params.h"
#include "core/models/model.h"

namespace ls {

// NVIDIA Nemotron-H and Nemotron Nano v2 (arch nemotron_h): a stack of single-mixer blocks,
// each an RMS norm, one mixer and a residual add. The mixer is a Mamba-2 layer where the
// per-layer attention.head_count_kv and feed_forward_length are both 0, attention without
// positional encoding where feed_forward_length is 0, and otherwise a squared-ReLU MLP (no
// gate). Mamba-2: core/models/mamba2_block.h; its states are per sequence slot,
// checkpointed like every hybrid's. Tensor names and keys are those of llama.cpp's
// converter. The MoE variant (Nemotron 3 Nano: expert_count) is refused by name.
class NemotronH final : public RecurrentModel {
public:
    Tensor* build_graph(Graph& g, const Ubatch& ub, KvCache& kv, RecurrentMemory* rs) const override;
    std::vector<RecurrentLayerSpec> recurrent_layout() const override;

private:
    void load_arch() override;
    enum class Mixer : uint8_t { Mamba, Attention, Mlp };
    struct Layer {
        Mixer kind;
        Tensor* norm;                        // (n_embd)
        Mamba2Weights mamba;                 // Mamba-2 layers
        AttnWeights at;                      // attention layers (optional biases)
        Tensor *up, *down, *up_b, *down_b;   // MLP (n_embd, F), (F, n_embd), optional biases
    };
    std::vector<Layer> layers_;
    Mamba2Sizes ssm_;
};

}  // namespace ls
