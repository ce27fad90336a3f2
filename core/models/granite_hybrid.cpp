#include "core/models/granite_hybrid.h"

#include <cmath>
#include <stdexcept>

#include "core/ir/ops.h"
#include "core/models/arch_keys.h"
#include "core/models/attention_block.h"
#include "core/models/ffn_block.h"
#include "core/models/scan_inputs.h"

namespace ls {

void GraniteHybrid::load_arch() {
    const GgufFile& f = *file_;
    hp_.arch = f.get_string("general.architecture");
    const ArchKeys keys(f, hp_.arch);
    auto bad = [&](const std::string& what) { throw std::runtime_error(hp_.arch + ": " + what); };
    read_decoder_sizes(keys, 1e-5);
    ssm_ = read_mamba2_sizes(keys);
    const int64_t n_head = keys.get_int(ArchKey::HeadCount);
    constexpr int64_t kMax = int64_t(1) << 24;
    if (hp_.n_embd <= 0 || hp_.n_embd > kMax || n_head <= 0 || hp_.n_layer <= 0 || hp_.n_layer > 4096)
        bad("inconsistent embedding_length / block_count / head_count in the GGUF metadata");
    if (keys.get_bool(ArchKey::RopeScalingFinetuned, true))
        bad("attention with rope (rope.scaling.finetuned true) is not supported; Granite 4.0-H's layers use none");
    embd_scale_ = float(keys.get_float(ArchKey::EmbeddingScale, 0.0));
    residual_scale_ = float(keys.get_float(ArchKey::ResidualScale, 0.0));
    logit_scale_ = float(keys.get_float(ArchKey::LogitScale, 0.0));
    for (float v : {embd_scale_, residual_scale_, logit_scale_})
        if (!std::isfinite(v) || v < 0) bad("embedding_scale, residual_scale and logit_scale must be finite and not negative");
    const int64_t n_expert = keys.get_int(ArchKey::ExpertCount, 0);
    hp_.n_ff = keys.get_int(ArchKey::FeedForwardLength);
    const int64_t F_sh = keys.get_int(ArchKey::ExpertSharedFeedForwardLength, 0);
    for (int64_t v : {hp_.n_ff, n_expert, F_sh})
        if (v < 0 || v > (int64_t(1) << 30)) bad("a feed-forward size of " + std::to_string(v) + " is out of range (broken metadata)");
    if (hp_.n_ff <= 0) bad("feed_forward_length must be positive");
    if (n_expert > 0) router_ = read_moe_router(keys, n_expert, true);
    const std::vector<int64_t> kv_heads = keys.per_layer(ArchKey::HeadCountKv, hp_.n_layer);
    const int64_t hd = keys.get_int(ArchKey::KeyLength, hp_.n_embd / n_head);
    if (hd <= 0 || hd > kMax || keys.get_int(ArchKey::ValueLength, hd) != hd) bad("key_length and value_length must be equal and positive");
    const double scale = keys.get_float(ArchKey::AttentionScale, 0.0);
    hp_.attn_scale = scale != 0.0 ? float(scale) : 1.0f / std::sqrt(float(hd));
    if (!std::isfinite(hp_.attn_scale) || hp_.attn_scale <= 0) bad("attention.scale must be a positive number");
    for (int64_t il = 0; il < hp_.n_layer; ++il) {
        const int64_t nkv = kv_heads[size_t(il)];
        if (nkv < 0 || (nkv > 0 && n_head % nkv)) bad("layer " + std::to_string(il) + ": head_count_kv " + std::to_string(nkv) + " does not divide head_count");
        LayerParams L;
        L.recurrent = nkv == 0;
        if (!L.recurrent) {
            L.n_head = int32_t(n_head);
            L.n_head_kv = int32_t(nkv);
            L.head_dim_k = L.head_dim_v = int32_t(hd);
        }
        hp_.layers.push_back(L);
    }

    bind_embeddings();
    const int64_t E = hp_.n_embd, F = hp_.n_ff;
    for (int64_t il = 0; il < hp_.n_layer; ++il) {
        const std::string p = "blk." + std::to_string(il) + ".";
        const LayerParams& L = hp_.layers[size_t(il)];
        Layer l{};
        l.attn_norm = norm_weight(p + "attn_norm.weight", E);
        l.ffn_norm = norm_weight(p + "ffn_norm.weight", E);
        if (L.recurrent) l.mamba = mamba2_weights(p, ssm_);
        else l.at = attn_weights(p, L, Biases::Optional);
        if (n_expert > 0) {
            l.gate_inp = matmul_weight(p + "ffn_gate_inp.weight", E, n_expert);
            l.experts.gate = expert_weight(p + "ffn_gate_exps.weight", E, F, n_expert);
            l.experts.up = expert_weight(p + "ffn_up_exps.weight", E, F, n_expert);
            l.experts.down = expert_weight(p + "ffn_down_exps.weight", F, E, n_expert);
            l.experts.n_ff = F;
            l.experts.act = MoeAct::Silu;
            if (F_sh > 0) {
                l.sh_gate = matmul_weight(p + "ffn_gate_shexp.weight", E, F_sh);
                l.sh_up = matmul_weight(p + "ffn_up_shexp.weight", E, F_sh);
                l.sh_down = matmul_weight(p + "ffn_down_shexp.weight", F_sh, E);
            }
        } else {
            l.ffn_gate = matmul_weight(p + "ffn_gate.weight", E, F);
            l.ffn_up = matmul_weight(p + "ffn_up.weight", E, F);
            l.ffn_down = matmul_weight(p + "ffn_down.weight", F, E);
        }
        layers_.push_back(l);
    }
}

std::vector<RecurrentLayerSpec> GraniteHybrid::recurrent_layout() const { return same_state_on_recurrent_layers(ssm_.state()); }

Tensor* GraniteHybrid::build_graph(Graph& g, const Ubatch& ub, KvCache& kv, RecurrentMemory* rs) const {
    using namespace ops;
    if (!rs) throw std::logic_error("granitehybrid: recurrent memory is required");
    const int64_t T = int64_t(ub.tokens.size());
    const float eps = hp_.rms_eps;
    Tensor* tokens = g.input(DType::I32, {T}, ub.tokens.data(), "tokens");
    Tensor* pos = g.input(DType::I32, {T}, ub.pos.data(), "pos");
    Tensor* seq = g.input(DType::I32, {T}, ub.seq.data(), "seq");
    const auto [runs_t, order_t] = scan_inputs(g, ub);
    CacheRows cache_rows(g, ub);
    Tensor* conv_rows = nullptr;
    auto residual = [&](Tensor* y) { return residual_scale_ != 0.f ? scale(g, y, residual_scale_) : y; };

    Tensor* x = get_rows(g, tok_embd_, tokens);  // (E, T)
    if (embd_scale_ != 0.f) x = scale(g, x, embd_scale_);
    for (int64_t il = 0; il < hp_.n_layer; ++il) {
        const Layer& w = layers_[size_t(il)];
        const LayerParams& L = hp_.layers[size_t(il)];
        Tensor* h = rms_norm(g, x, w.attn_norm, eps);
        Tensor* o;
        if (L.recurrent) {
            o = mamba2_mixer(g, w.mamba, ssm_, h, *rs, int(il), runs_t, order_t, conv_rows, eps);
        } else {
            o = nope_attention(g, kv, cache_rows, int(il), w.at, L, h, pos, seq, hp_.attn_scale);
        }
        x = add(g, x, residual(o));
        Tensor* hf = rms_norm(g, x, w.ffn_norm, eps);
        Tensor* f;
        if (w.gate_inp) {
            const MoeRoute r = route_experts(g, router_, w.gate_inp, nullptr, hf);
            f = moe_experts(g, w.experts, hf, r.ids, r.wts);
            if (w.sh_gate) f = add(g, f, gated_ffn(g, hf, w.sh_gate, w.sh_up, w.sh_down, GatedAct::Silu));
        } else {
            f = gated_ffn(g, hf, w.ffn_gate, w.ffn_up, w.ffn_down, GatedAct::Silu);
        }
        x = add(g, x, residual(f));
    }
    Tensor* out = output_head(g, ub, x);
    // (hidden states for embeddings are not logits: they are not divided)
    if (out && logit_scale_ != 0.f && !ub.hidden) out = scale(g, out, 1.0f / logit_scale_);
    return out;
}

}  // namespace ls
