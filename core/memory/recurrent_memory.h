// Recurrent memory of hybrid models, beside the KV cache (SEMANTICS.md section 2): per
// recurrent layer, a conv state and a delta-rule state per sequence slot, in one persistent
// buffer that no graph planner owns. The scan ops read and write a slot's rows in place.
#pragma once
#include <memory>
#include <vector>

#include "core/ir/backend.h"

namespace ls {

struct RecurrentLayerSpec {
    int64_t conv_row = 0;   // floats of conv state per slot: (d_conv - 1) * channels; 0 = not recurrent
    int64_t state_row = 0;  // floats of scan state per slot: n_v_heads * d_v * d_k; 0 with conv_row > 0: a convolution alone (LFM2)
};

class RecurrentMemory {
public:
    RecurrentMemory(Backend& be, const std::vector<RecurrentLayerSpec>& layers, int32_t n_seq);
    // Each layer's state on its own backend (beside its weights): one buffer per backend.
    RecurrentMemory(const std::vector<Backend*>& layer_backends, const std::vector<RecurrentLayerSpec>& layers, int32_t n_seq);
    // The bytes a layer's state and its checkpoints take for n_seq slots.
    static size_t layer_bytes(const RecurrentLayerSpec& L, int32_t n_seq);
    // F32 [conv_row, n_seq] and [state_row, n_seq]; null for layers that are not recurrent.
    Tensor* conv(int il) { return conv_[size_t(il)].ne[0] ? &conv_[size_t(il)] : nullptr; }
    Tensor* state(int il) { return state_[size_t(il)].ne[0] ? &state_[size_t(il)] : nullptr; }
    int32_t n_seq() const { return n_seq_; }
    // Zeroes every slot (one buffer fill).
    void clear();
    // Slot dst becomes a copy of slot src (every layer).
    void copy_slot(int src, int dst);
    // Each slot has kCheckpointBanks checkpoints: copies of its whole state (every layer)
    // kept beside it, so that a caller can return the sequence to an earlier point. Bank 0
    // serves chat prefix reuse, bank 1 speculative decoding's verification steps.
    static constexpr int kCheckpointBanks = 2;
    void save_checkpoint(int slot, int bank = 0);
    void restore_checkpoint(int slot, int bank = 0);
    // A sequence's state as bytes (Session::save_seq / load_seq): layer il's conv state, then
    // its scan state, of one slot; slot_bytes(il) of them (0 for a layer that is not recurrent).
    size_t slot_bytes(int il) const;
    void read_slot(int il, int slot, void* dst) const;
    void write_slot(int il, int slot, const void* src);

private:
    std::vector<Backend*> be_;  // per layer
    int32_t n_seq_;
    std::vector<Tensor> conv_, state_;
    std::vector<size_t> conv_ckpt_, state_ckpt_;  // offsets of each layer's checkpoint columns, bank 0 (bank b: + b * its buffer's bank bytes)
    std::vector<size_t> slot_;                    // per layer: its buffer in buffers_
    std::vector<size_t> ckpt_bank_;               // per buffer: bytes of one bank
    std::vector<std::unique_ptr<Buffer>> buffers_;  // one per distinct backend
};

}  // namespace ls
