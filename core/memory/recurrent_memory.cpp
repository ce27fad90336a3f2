#include "core/memory/recurrent_memory.h"

#include <stdexcept>
#include <string>

namespace ls {

RecurrentMemory::RecurrentMemory(Backend& be, const std::vector<RecurrentLayerSpec>& layers, int32_t n_seq)
    : be_(be), n_seq_(n_seq), conv_(layers.size()), state_(layers.size()) {
    if (n_seq < 1) throw std::invalid_argument("recurrent memory: the number of sequences must be at least 1");
    size_t total = 0;
    for (size_t il = 0; il < layers.size(); ++il) {
        const RecurrentLayerSpec& L = layers[il];
        if ((L.conv_row == 0) != (L.state_row == 0) || L.conv_row < 0 || L.state_row < 0)
            throw std::invalid_argument("recurrent memory: layer " + std::to_string(il) + " has an invalid geometry");
        if (L.conv_row == 0) {
            conv_[il].ne[0] = state_[il].ne[0] = 0;
            continue;
        }
        for (auto [t, row, what] : {std::tuple{&conv_[il], L.conv_row, "conv_state."}, std::tuple{&state_[il], L.state_row, "scan_state."}}) {
            t->type = DType::F32;
            t->ne[0] = row;
            t->ne[1] = n_seq;
            set_contiguous_strides(*t);
            t->kind = TensorKind::Persistent;
            t->offset = total;
            t->name = what + std::to_string(il);
            total += (t->nbytes() + 255) / 256 * 256;
        }
    }
    // The checkpoints: the same columns again, after every live tensor, once per bank.
    const size_t live = total;
    conv_ckpt_.assign(layers.size(), 0);
    state_ckpt_.assign(layers.size(), 0);
    for (size_t il = 0; il < layers.size(); ++il) {
        if (conv_[il].ne[0] == 0) continue;
        for (auto [t, off] : {std::pair{&conv_[il], &conv_ckpt_[il]}, std::pair{&state_[il], &state_ckpt_[il]}}) {
            *off = total;
            total += (t->nbytes() + 255) / 256 * 256;
        }
    }
    ckpt_bank_ = total - live;
    total += ckpt_bank_ * (kCheckpointBanks - 1);
    buffer_ = be.alloc(std::max<size_t>(total, 256));
    for (size_t il = 0; il < layers.size(); ++il) conv_[il].buffer = state_[il].buffer = buffer_.get();
    clear();
}

void RecurrentMemory::clear() { be_.fill(*buffer_, 0, buffer_->size, 0); }

void RecurrentMemory::copy_slot(int src, int dst) {
    if (src < 0 || src >= n_seq_ || dst < 0 || dst >= n_seq_)
        throw std::out_of_range("recurrent memory: slot outside [0, " + std::to_string(n_seq_) + ")");
    if (src == dst) return;
    for (size_t il = 0; il < conv_.size(); ++il)
        for (Tensor* t : {&conv_[il], &state_[il]}) {
            if (t->ne[0] == 0) continue;
            be_.copy(*buffer_, t->offset + size_t(dst) * t->nb[1], t->offset + size_t(src) * t->nb[1], t->nb[1]);
        }
}

namespace {
void check_slot_bank(int slot, int n_seq, int bank) {
    if (slot < 0 || slot >= n_seq) throw std::out_of_range("recurrent memory: slot outside [0, " + std::to_string(n_seq) + ")");
    if (bank < 0 || bank >= RecurrentMemory::kCheckpointBanks)
        throw std::out_of_range("recurrent memory: checkpoint bank " + std::to_string(bank) + " does not exist");
}
}  // namespace

void RecurrentMemory::save_checkpoint(int slot, int bank) {
    check_slot_bank(slot, n_seq_, bank);
    const size_t b = size_t(bank) * ckpt_bank_;
    for (size_t il = 0; il < conv_.size(); ++il)
        for (auto [t, off] : {std::pair{&conv_[il], conv_ckpt_[il]}, std::pair{&state_[il], state_ckpt_[il]}}) {
            if (t->ne[0] == 0) continue;
            be_.copy(*buffer_, b + off + size_t(slot) * t->nb[1], t->offset + size_t(slot) * t->nb[1], t->nb[1]);
        }
}

void RecurrentMemory::restore_checkpoint(int slot, int bank) {
    check_slot_bank(slot, n_seq_, bank);
    const size_t b = size_t(bank) * ckpt_bank_;
    for (size_t il = 0; il < conv_.size(); ++il)
        for (auto [t, off] : {std::pair{&conv_[il], conv_ckpt_[il]}, std::pair{&state_[il], state_ckpt_[il]}}) {
            if (t->ne[0] == 0) continue;
            be_.copy(*buffer_, t->offset + size_t(slot) * t->nb[1], b + off + size_t(slot) * t->nb[1], t->nb[1]);
        }
}

}  // namespace ls
