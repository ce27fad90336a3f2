#include "core/models/nemotron_h.h"

#include <cmath>
#include <stdexcept>

#include "core/ir/ops.h"
#include "core/models/arch_keys.h"
#include "core/models/attention_block.h"
#include "core/models/scan_inputs.h"

namespace ls {

void NemotronH::load_arch() {
    const GgufFile& f = *file_;
    hp_.arch = f.get_string("general.architecture");
    const ArchKeys keys(f, hp_.arch);
    auto bad = [&](const std::string& what) { throw std::runtime_error(hp_.arch + ": " + what); };
    read_decoder_sizes(keys, 1e-5);
    if (keys.get_int(ArchKey::ExpertCount, 0) != 0) bad("mixture-of-experts layers (Nemotron 3 Nano) are not supported");
    ssm_ = read_mamba2_sizes(keys);
    const int64_t n_head = keys.get_int(ArchKey::HeadCount);
    if (hp_.n_embd <= 0 || hp_.n_embd > (int64_t(1) << 24) || n_head <= 0 || hp_.n_layer <= 0 || hp_.n_layer > 4096)
        bad("inconsistent embedding_length / block_count / head_count in the GGUF metadata");
    // Per layer: head_count_kv and feed_forward_length 0 make a Mamba-2 layer, feed_forward_length
    // 0 alone an attention layer, anything else an MLP layer (llama.cpp's reading).
    const std::vector<int64_t> kv_heads = keys.per_layer(ArchKey::HeadCountKv, hp_.n_layer);
    const std::vector<int64_t> ffn = keys.per_layer(ArchKey::FeedForwardLength, hp_.n_layer);
    const int64_t hd = keys.get_int(ArchKey::KeyLength, hp_.n_embd / n_head);
    if (hd <= 0 || hd > (int64_t(1) << 24) || keys.get_int(ArchKey::ValueLength, hd) != hd) bad("key_length and value_length must be equal and positive");
    hp_.attn_scale = 1.0f / std::sqrt(float(hd));
    for (int64_t il = 0; il < hp_.n_layer; ++il) {
        const int64_t nkv = kv_heads[size_t(il)], F = ffn[size_t(il)];
        if (nkv < 0 || F < 0 || F > (int64_t(1) << 30) || (nkv > 0 && n_head % nkv))
            bad("layer " + std::to_string(il) + ": head_count_kv " + std::to_string(nkv) + " / feed_forward_length " + std::to_string(F) +
                " are inconsistent");
        LayerParams L;
        L.recurrent = nkv == 0 && F == 0;
        if (nkv > 0 && F == 0) {
            L.n_head = int32_t(n_head);
            L.n_head_kv = int32_t(nkv);
            L.head_dim_k = L.head_dim_v = int32_t(hd);
        }
        hp_.layers.push_back(L);
    }

    bind_embeddings();
    const int64_t E = hp_.n_embd;
    for (int64_t il = 0; il < hp_.n_layer; ++il) {
        const std::string p = "blk." + std::to_string(il) + ".";
        const LayerParams& L = hp_.layers[size_t(il)];
        const int64_t F = ffn[size_t(il)];
        Layer l{};
        l.norm = norm_weight(p + "attn_norm.weight", E);
        if (L.recurrent) {
            l.kind = Mixer::Mamba;
            l.mamba = mamba2_weights(p, ssm_);
        } else if (F == 0) {
            l.kind = Mixer::Attention;
            l.at = attn_weights(p, L, Biases::Optional);
        } else {
            l.kind = Mixer::Mlp;
            l.up = matmul_weight(p + "ffn_up.weight", E, F);
            l.down = matmul_weight(p + "ffn_down.weight", F, E);
            l.up_b = weight(p + "ffn_up.bias", {F}, false);
            l.down_b = weight(p + "ffn_down.bias", {E}, false);
        }
        layers_.push_back(l);
    }
}

std::vector<RecurrentLayerSpec> NemotronH::recurrent_layout() const { return same_state_on_recurrent_layers(ssm_.state()); }

Tensor* NemotronH::build_graph(Graph& g, const Ubatch& ub, KvCache& kv, RecurrentMemory* rs) const {
    using namespace ops;
    if (!rs) throw std::logic_error("nemotron_h: recurrent memory is required");
    const int64_t T = int64_t(ub.tokens.size());
    const float eps = hp_.rms_eps;
    Tensor* tokens = g.input(DType::I32, {T}, ub.tokens.data(), "tokens");
    Tensor* pos = g.input(DType::I32, {T}, ub.pos.data(), "pos");
    Tensor* seq = g.input(DType::I32, {T}, ub.seq.data(), "seq");
    const auto [runs_t, order_t] = scan_inputs(g, ub);
    CacheRows cache_rows(g, ub);
    Tensor* conv_rows = nullptr;
    auto biased = [&](Tensor* y, Tensor* b) { return b ? add(g, y, b) : y; };

    Tensor* x = get_rows(g, tok_embd_, tokens);  // (E, T)
    for (int64_t il = 0; il < hp_.n_layer; ++il) {
        const Layer& w = layers_[size_t(il)];
        const LayerParams& L = hp_.layers[size_t(il)];
        Tensor* h = rms_norm(g, x, w.norm, eps);
        Tensor* o;
        if (w.kind == Mixer::Mamba) {
            o = mamba2_mixer(g, w.mamba, ssm_, h, *rs, int(il), runs_t, order_t, conv_rows, eps);
        } else if (w.kind == Mixer::Attention) {
            o = nope_attention(g, kv, cache_rows, int(il), w.at, L, h, pos, seq, hp_.attn_scale);
        } else {
            Tensor* u = clamp(g, biased(mul_mat(g, w.up, h), w.up_b), 0.0f, INFINITY);  // relu
            o = biased(mul_mat(g, w.down, mul(g, u, u)), w.down_b);                     // of its square
        }
        x = add(g, x, o);
    }
    return output_head(g, ub, x);
}

}  // namespace ls
