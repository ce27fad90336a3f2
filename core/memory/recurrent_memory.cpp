#include "core/memory/recurrent_memory.h"

#include <stdexcept>
#include <string>
#include <tuple>
#include <algorithm>

namespace ls {

namespace {
size_t al256(size_t n) { return (n + 255) / 256 * 256; }
}  // namespace

size_t RecurrentMemory::layer_bytes(const RecurrentLayerSpec& L, int32_t n_seq) {
    return (al256(size_t(L.conv_row) * 4 * size_t(n_seq)) + al256(size_t(L.state_row) * 4 * size_t(n_seq))) * (1 + kCheckpointBanks);
}

RecurrentMemory::RecurrentMemory(Backend& be, const std::vector<RecurrentLayerSpec>& layers, int32_t n_seq)
    : RecurrentMemory(std::vector<Backend*>(layers.size(), &be), layers, n_seq) {}

RecurrentMemory::RecurrentMemory(const std::vector<Backend*>& layer_backends, const std::vector<RecurrentLayerSpec>& layers, int32_t n_seq)
    : be_(layer_backends), n_seq_(n_seq), conv_(layers.size()), state_(layers.size()), slot_(layers.size(), 0) {
    if (n_seq < 1) throw std::invalid_argument("recurrent memory: the number of sequences must be at least 1");
    if (be_.size() != layers.size())
        throw std::invalid_argument("recurrent memory: " + std::to_string(be_.size()) + " backends for " + std::to_string(layers.size()) + " layers");
    std::vector<Backend*> owners;
    std::vector<size_t> totals;
    for (size_t il = 0; il < layers.size(); ++il) {
        size_t i = 0;
        while (i < owners.size() && owners[i] != be_[il]) ++i;
        if (i == owners.size()) owners.push_back(be_[il]), totals.push_back(0);
        slot_[il] = i;
    }
    for (size_t il = 0; il < layers.size(); ++il) {
        const RecurrentLayerSpec& L = layers[il];
        // (A layer may keep a convolution state alone, LFM2's short convolutions: state_row 0.)
        if ((L.conv_row == 0 && L.state_row != 0) || L.conv_row < 0 || L.state_row < 0)
            throw std::invalid_argument("recurrent memory: layer " + std::to_string(il) + " has an invalid geometry");
        if (L.conv_row == 0) {
            conv_[il].ne[0] = state_[il].ne[0] = 0;
            continue;
        }
        size_t& total = totals[slot_[il]];
        for (auto [t, row, what] : {std::tuple{&conv_[il], L.conv_row, "conv_state."}, std::tuple{&state_[il], L.state_row, "scan_state."}}) {
            t->type = DType::F32;
            t->ne[0] = row;
            t->ne[1] = n_seq;
            set_contiguous_strides(*t);
            t->kind = TensorKind::Persistent;
            t->offset = total;
            t->name = what + std::to_string(il);
            total += al256(t->nbytes());
        }
    }
    // The checkpoints: the same columns again, after every live tensor of the buffer, once per bank.
    const std::vector<size_t> live = totals;
    conv_ckpt_.assign(layers.size(), 0);
    state_ckpt_.assign(layers.size(), 0);
    for (size_t il = 0; il < layers.size(); ++il) {
        if (conv_[il].ne[0] == 0) continue;
        for (auto [t, off] : {std::pair{&conv_[il], &conv_ckpt_[il]}, std::pair{&state_[il], &state_ckpt_[il]}}) {
            *off = totals[slot_[il]];
            totals[slot_[il]] += al256(t->nbytes());
        }
    }
    for (size_t i = 0; i < owners.size(); ++i) {
        ckpt_bank_.push_back(totals[i] - live[i]);
        buffers_.push_back(owners[i]->alloc(std::max<size_t>(totals[i] + ckpt_bank_[i] * (kCheckpointBanks - 1), 256)));
    }
    for (size_t il = 0; il < layers.size(); ++il) conv_[il].buffer = state_[il].buffer = buffers_[slot_[il]].get();
    clear();
}

void RecurrentMemory::clear() {
    for (auto& b : buffers_) b->backend->fill(*b, 0, b->size, 0);
}

void RecurrentMemory::copy_slot(int src, int dst) {
    if (src < 0 || src >= n_seq_ || dst < 0 || dst >= n_seq_)
        throw std::out_of_range("recurrent memory: slot outside [0, " + std::to_string(n_seq_) + ")");
    if (src == dst) return;
    for (size_t il = 0; il < conv_.size(); ++il)
        for (Tensor* t : {&conv_[il], &state_[il]}) {
            if (t->ne[0] == 0) continue;
            be_[il]->copy(*t->buffer, t->offset + size_t(dst) * t->nb[1], t->offset + size_t(src) * t->nb[1], t->nb[1]);
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
    for (size_t il = 0; il < conv_.size(); ++il)
        for (auto [t, off] : {std::pair{&conv_[il], conv_ckpt_[il]}, std::pair{&state_[il], state_ckpt_[il]}}) {
            if (t->ne[0] == 0) continue;
            const size_t b = size_t(bank) * ckpt_bank_[slot_[il]];
            be_[il]->copy(*t->buffer, b + off + size_t(slot) * t->nb[1], t->offset + size_t(slot) * t->nb[1], t->nb[1]);
        }
}

void RecurrentMemory::restore_checkpoint(int slot, int bank) {
    check_slot_bank(slot, n_seq_, bank);
    for (size_t il = 0; il < conv_.size(); ++il)
        for (auto [t, off] : {std::pair{&conv_[il], conv_ckpt_[il]}, std::pair{&state_[il], state_ckpt_[il]}}) {
            if (t->ne[0] == 0) continue;
            const size_t b = size_t(bank) * ckpt_bank_[slot_[il]];
            be_[il]->copy(*t->buffer, t->offset + size_t(slot) * t->nb[1], b + off + size_t(slot) * t->nb[1], t->nb[1]);
        }
}

size_t RecurrentMemory::slot_bytes(int il) const {
    const Tensor& c = conv_.at(size_t(il));
    return c.ne[0] ? c.nb[1] + state_.at(size_t(il)).nb[1] : 0;
}

void RecurrentMemory::read_slot(int il, int slot, void* dst) const {
    check_slot_bank(slot, n_seq_, 0);
    auto* out = static_cast<uint8_t*>(dst);
    for (const Tensor* t : {&conv_.at(size_t(il)), &state_.at(size_t(il))}) {
        if (t->ne[0] == 0) continue;
        be_[size_t(il)]->download(*t->buffer, t->offset + size_t(slot) * t->nb[1], out, t->nb[1]);
        out += t->nb[1];
    }
}

void RecurrentMemory::write_slot(int il, int slot, const void* src) {
    check_slot_bank(slot, n_seq_, 0);
    const auto* in = static_cast<const uint8_t*>(src);
    for (Tensor* t : {&conv_.at(size_t(il)), &state_.at(size_t(il))}) {
        if (t->ne[0] == 0) continue;
        be_[size_t(il)]->upload(*t->buffer, t->offset + size_t(slot) * t->nb[1], in, t->nb[1]);
        in += t->nb[1];
    }
}

}  // namespace ls
