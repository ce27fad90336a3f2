#include "core/models/bert.h"

#include <cmath>
#include <stdexcept>

#include "core/models/arch_keys.h"
#include "core/ir/ops.h"
#include "core/models/attention_block.h"
#include "core/models/ffn_block.h"

namespace ls {

void Bert::load_arch() {
    const GgufFile& f = *file_;
    const std::string arch = f.get_string("general.architecture");
    const bool nomic = arch == "nomic-bert";
    const std::string a = arch + ".";
    const ArchKeys keys(f, arch);
    auto bad = [&](const std::string& what) { throw std::runtime_error(arch + ": " + what); };
    hp_.arch = arch;
    hp_.n_embd = keys.get_int(ArchKey::EmbeddingLength);
    hp_.n_layer = keys.get_int(ArchKey::BlockCount);
    hp_.n_ff = keys.get_int(ArchKey::FeedForwardLength);
    hp_.n_ctx_train = keys.get_int(ArchKey::ContextLength, 0);
    ln_eps_ = float(keys.get_float(ArchKey::LayerNormEps, 1e-12));
    // An encoder: both ways (a file that says attention.causal = true is not one we know).
    if (keys.get_bool(ArchKey::AttentionCausal, false)) bad("attention.causal is true; a BERT encoder attends both ways");
    hp_.causal = false;
    hp_.has_logits = false;
    const int64_t n_head = keys.get_int(ArchKey::HeadCount);
    const int64_t n_head_kv = keys.get_int(ArchKey::HeadCountKv, n_head);
    constexpr int64_t kMax = int64_t(1) << 30;
    for (int64_t v : {hp_.n_embd, hp_.n_ff, n_head, n_head_kv, hp_.n_ctx_train})
        if (v > kMax) bad("a hyperparameter of " + std::to_string(v) + " is out of range (broken metadata)");
    if (hp_.n_embd <= 0 || hp_.n_layer <= 0 || hp_.n_layer > 4096 || hp_.n_ff <= 0 || n_head <= 0 || n_head_kv != n_head ||
        hp_.n_embd % n_head || (hp_.n_embd / n_head) % 2)
        bad("inconsistent hyperparameters in the GGUF metadata (n_embd a multiple of an even head size, as many kv heads as heads)");
    if (!(ln_eps_ > 0.f) || !std::isfinite(ln_eps_)) bad("attention.layer_norm_epsilon must be a positive number");
    const int64_t hd = hp_.n_embd / n_head;
    hp_.attn_scale = 1.0f / std::sqrt(float(hd));
    rope_ = nomic;
    rope_base_ = float(keys.get_float(ArchKey::RopeFreqBase, 10000.0));
    if (rope_ && (!(rope_base_ > 1.0f) || !std::isfinite(rope_base_))) bad("rope.freq_base must be a finite number above 1");
    for (int64_t il = 0; il < hp_.n_layer; ++il)
        hp_.layers.push_back({.window = 0, .rope_base = rope_base_, .rope_scale = 1.f, .n_head = int32_t(n_head),
                              .n_head_kv = int32_t(n_head_kv), .head_dim_k = int32_t(hd), .head_dim_v = int32_t(hd)});

    const int64_t E = hp_.n_embd, F = hp_.n_ff;
    zeros_.assign(size_t(E), 0.0f);
    const GgufTensorInfo* te = f.find_tensor("token_embd.weight");
    if (!te) bad("model is missing tensor 'token_embd.weight'");
    hp_.n_vocab = te->ne[1];
    tok_embd_ = matmul_weight("token_embd.weight", E, hp_.n_vocab);
    if (const GgufTensorInfo* tt = f.find_tensor("token_types.weight")) type_embd_ = weight("token_types.weight", {E, tt->ne[1]});
    if (!nomic) {
        if (hp_.n_ctx_train <= 0) bad("context_length is missing (it sizes position_embd)");
        pos_embd_ = weight("position_embd.weight", {E, hp_.n_ctx_train});
    }
    embd_norm_ = {norm_weight("token_embd_norm.weight", E), norm_weight("token_embd_norm.bias", E)};
    const Biases biases = nomic ? Biases::Optional : Biases::Required;
    auto bias = [&](const std::string& name, int64_t n) {
        return biases == Biases::Required || f.find_tensor(name) ? norm_weight(name, n) : nullptr;
    };
    for (int64_t il = 0; il < hp_.n_layer; ++il) {
        const std::string p = "blk." + std::to_string(il) + ".";
        Layer l;
        if (f.find_tensor(p + "attn_qkv.weight")) {
            l.wqkv = matmul_weight(p + "attn_qkv.weight", E, 3 * E);
            if (f.find_tensor(p + "attn_qkv.bias")) l.bqkv = norm_weight(p + "attn_qkv.bias", 3 * E);
            l.at.wo = matmul_weight(p + "attn_output.weight", E, E);
            l.at.bo = bias(p + "attn_output.bias", E);
        } else {
            if (!f.find_tensor(p + "attn_q.weight"))
                bad("model is missing tensor '" + p + "attn_qkv.weight' (or '" + p + "attn_q.weight', attn_k and attn_v)");
            l.at = attn_weights(p, hp_.layers[size_t(il)], biases);
        }
        l.attn_out_norm = {norm_weight(p + "attn_output_norm.weight", E), norm_weight(p + "attn_output_norm.bias", E)};
        l.ffn_up = matmul_weight(p + "ffn_up.weight", E, F);
        if (nomic) l.ffn_gate = matmul_weight(p + "ffn_gate.weight", E, F);
        l.ffn_down = matmul_weight(p + "ffn_down.weight", F, E);
        l.ffn_up_b = bias(p + "ffn_up.bias", F);
        l.ffn_down_b = bias(p + "ffn_down.bias", E);
        l.layer_out_norm = {norm_weight(p + "layer_output_norm.weight", E), norm_weight(p + "layer_output_norm.bias", E)};
        layers_.push_back(l);
    }
}

Tensor* Bert::layer_norm(Graph& g, Tensor* x, const Norm& n) const { return ops::layer_norm(g, x, n.w, n.b, ln_eps_); }

Tensor* Bert::build_graph(Graph& g, const Ubatch& ub, KvCache& kv) const {
    using namespace ops;
    const int64_t T = int64_t(ub.tokens.size()), E = hp_.n_embd;
    Tensor* tokens = g.input(DType::I32, {T}, ub.tokens.data(), "tokens");
    Tensor* seq = g.input(DType::I32, {T}, ub.seq.data(), "seq");
    Tensor* last_key = attn_positions(g, ub, hp_.causal);
    CacheRows cache_rows(g, ub);
    RopeTables rope_tables(g, ub.pos);

    Tensor* x = get_rows(g, tok_embd_, tokens);  // (E, T)
    // Token type 0 for every token ("sentence A"), as llama.cpp does.
    if (type_embd_) x = add(g, x, get_rows(g, type_embd_, g.input(DType::I32, {1}, &kZero, "type0")));
    if (pos_embd_) x = add(g, x, get_rows(g, pos_embd_, g.input(DType::I32, {T}, ub.pos.data(), "pos")));
    x = layer_norm(g, x, embd_norm_);
    for (int64_t il = 0; il < hp_.n_layer; ++il) {
        const Layer& w = layers_[size_t(il)];
        const LayerParams& L = hp_.layers[size_t(il)];
        Tensor *q, *k, *v;  // (E, T) each
        if (w.wqkv) {
            Tensor* qkv = mul_mat(g, w.wqkv, x);  // (3E, T)
            if (w.bqkv) qkv = add(g, qkv, w.bqkv);
            // Each third as a contiguous tensor (adding +0 copies the strided view).
            Tensor* zero = g.input(DType::F32, {E}, zeros_.data(), "zero");
            const size_t rs = size_t(3 * E) * 4;
            q = add(g, view_2d(g, qkv, E, T, rs, 0), zero);
            k = add(g, view_2d(g, qkv, E, T, rs, size_t(E) * 4), zero);
            v = add(g, view_2d(g, qkv, E, T, rs, size_t(2 * E) * 4), zero);
        } else {
            q = mul_mat(g, w.at.wq, x);
            k = mul_mat(g, w.at.wk, x);
            v = mul_mat(g, w.at.wv, x);
            if (w.at.bq) q = add(g, q, w.at.bq);
            if (w.at.bk) k = add(g, k, w.at.bk);
            if (w.at.bv) v = add(g, v, w.at.bv);
        }
        Tensor* q3 = reshape(g, q, {L.head_dim_k, L.n_head, T});
        if (rope_) {
            const RopeParams rp{L.head_dim_k, ROPE_NEOX, L.rope_base, L.rope_scale};
            q3 = rope(g, q3, rope_tables(rp), rp);
            k = reshape(g, rope(g, reshape(g, k, {L.head_dim_k, L.n_head_kv, T}), rope_tables(rp), rp), {E, T});
        }
        Tensor* a = cached_attention(g, kv, cache_rows, int(il), q3, k, v, last_key, seq, L.n_head_kv, hp_.attn_scale);  // (head_dim, n_head, T)
        Tensor* o = mul_mat(g, w.at.wo, reshape(g, a, {E, T}));
        if (w.at.bo) o = add(g, o, w.at.bo);
        x = layer_norm(g, add(g, o, x), w.attn_out_norm);

        Tensor* f;
        if (w.ffn_gate) {
            f = gated_act(g, x, w.ffn_gate, w.ffn_up, GatedAct::Silu);
        } else {
            Tensor* up = mul_mat(g, w.ffn_up, x);
            if (w.ffn_up_b) up = add(g, up, w.ffn_up_b);
            f = gelu(g, up);
        }
        f = mul_mat(g, w.ffn_down, f);
        if (w.ffn_down_b) f = add(g, f, w.ffn_down_b);
        x = layer_norm(g, add(g, f, x), w.layer_out_norm);
    }
    return output_head(g, ub, x);
}

}  // namespace ls
