#include "core/models/gemma2.h"

#include <cfloat>
#include <cmath>
#include <stdexcept>

#include "core/ir/ops.h"

namespace ls {

namespace {
[[noreturn]] void bad(const std::string& what) { throw std::runtime_error("gemma2: " + what); }
}  // namespace

void Gemma2::load_arch() {
    const GgufFile& f = *file_;
    const std::string a = "gemma2.";
    hp_.arch = "gemma2";
    hp_.n_embd = f.get_int(a + "embedding_length");
    hp_.n_layer = f.get_int(a + "block_count");
    hp_.n_ff = f.get_int(a + "feed_forward_length");
    hp_.n_ctx_train = f.get_int(a + "context_length", 0);
    hp_.rms_eps = float(f.get_float(a + "attention.layer_norm_rms_epsilon", 1e-6));
    const int64_t n_head = f.get_int(a + "attention.head_count");
    const int64_t n_head_kv = f.get_int(a + "attention.head_count_kv", n_head);
    const int64_t hd_k = f.get_int(a + "attention.key_length", n_head > 0 ? hp_.n_embd / n_head : 0);
    const int64_t hd_v = f.get_int(a + "attention.value_length", hd_k);
    // The published models' window when the file does not say (llama.cpp's default too).
    const int64_t window = f.get_int(a + "attention.sliding_window", 4096);
    const int64_t period = f.get_int(a + "attention.sliding_window_pattern", 2);
    const float base = float(f.get_float(a + "rope.freq_base", 10000.0));
    attn_softcap_ = float(f.get_float(a + "attn_logit_softcapping", 50.0));
    final_softcap_ = float(f.get_float(a + "final_logit_softcapping", 30.0));
    constexpr int64_t kMax = int64_t(1) << 30;
    for (int64_t v : {hp_.n_embd, hp_.n_ff, n_head, n_head_kv, hd_k, hd_v, window, period})
        if (v > kMax) bad("a hyperparameter of " + std::to_string(v) + " is out of range (broken metadata)");
    if (hp_.n_embd <= 0 || hp_.n_layer <= 0 || hp_.n_layer > 4096 || hp_.n_ff <= 0 || n_head <= 0 || n_head_kv <= 0 ||
        n_head % n_head_kv || hd_k <= 0 || hd_k % 2 || hd_v <= 0 || window <= 0 || period < 1)
        bad("inconsistent hyperparameters in the GGUF metadata");
    for (float c : {attn_softcap_, final_softcap_})
        if (!std::isfinite(c) || (c != 0.f && !(c >= FLT_MIN))) bad("soft-caps must be positive or 0 (off)");
    if (!(base > 1.0f) || !std::isfinite(base)) bad("rope.freq_base must be a finite number above 1");
    if (hp_.n_ctx_train > 0 && window > hp_.n_ctx_train)
        bad("sliding window of " + std::to_string(window) + " tokens is larger than the model's context of " +
            std::to_string(hp_.n_ctx_train) + " (broken metadata)");
    // Queries are scaled by query_pre_attn_scalar^-1/2, which the converter does not write:
    // it is the head size except in the 27B (46 layers), where it is n_embd / n_head. A file
    // that carries attention.scale is taken at its word.
    const double scale = f.get_float(a + "attention.scale", 0.0);
    hp_.attn_scale = scale != 0.0                ? float(scale)
                     : hp_.n_layer == 46 ? 1.0f / std::sqrt(float(hp_.n_embd / n_head))
                                             : 1.0f / std::sqrt(float(hd_k));
    if (!std::isfinite(hp_.attn_scale) || hp_.attn_scale <= 0) bad("attention.scale must be a positive number");
    for (int64_t il = 0; il < hp_.n_layer; ++il) {
        LayerParams L;
        // Of every `period` layers all but the last slide: with the default 2, the even ones.
        L.window = il % period < period - 1 ? int32_t(window) : 0;
        L.rope_base = base;
        L.n_head = int32_t(n_head);
        L.n_head_kv = int32_t(n_head_kv);
        L.head_dim_k = int32_t(hd_k);
        L.head_dim_v = int32_t(hd_v);
        hp_.layers.push_back(L);
    }

    const int64_t E = hp_.n_embd, F = hp_.n_ff;
    bind_embeddings();
    for (int64_t il = 0; il < hp_.n_layer; ++il) {
        const std::string p = "blk." + std::to_string(il) + ".";
        Layer l;
        l.attn_norm = norm_weight(p + "attn_norm.weight", E);
        l.wq = matmul_weight(p + "attn_q.weight", E, n_head * hd_k);
        l.wk = matmul_weight(p + "attn_k.weight", E, n_head_kv * hd_k);
        l.wv = matmul_weight(p + "attn_v.weight", E, n_head_kv * hd_v);
        l.wo = matmul_weight(p + "attn_output.weight", n_head * hd_v, E);
        l.post_attn_norm = norm_weight(p + "post_attention_norm.weight", E);
        l.ffn_norm = norm_weight(p + "ffn_norm.weight", E);
        l.ffn_gate = matmul_weight(p + "ffn_gate.weight", E, F);
        l.ffn_up = matmul_weight(p + "ffn_up.weight", E, F);
        l.ffn_down = matmul_weight(p + "ffn_down.weight", F, E);
        l.post_ffw_norm = norm_weight(p + "post_ffw_norm.weight", E);
        layers_.push_back(l);
    }
}

Tensor* Gemma2::build_graph(Graph& g, const Ubatch& ub, KvCache& kv) const {
    using namespace ops;
    const int64_t T = int64_t(ub.tokens.size()), E = hp_.n_embd;
    const float eps = hp_.rms_eps;
    Tensor* tokens = g.input(DType::I32, {T}, ub.tokens.data(), "tokens");
    Tensor* pos = g.input(DType::I32, {T}, ub.pos.data(), "pos");
    Tensor* seq = g.input(DType::I32, {T}, ub.seq.data(), "seq");
    CacheRows cache_rows(g, ub);

    Tensor* x = scale(g, get_rows(g, tok_embd_, tokens), std::sqrt(float(E)));  // (E, T)
    for (int64_t il = 0; il < hp_.n_layer; ++il) {
        const Layer& w = layers_[size_t(il)];
        const LayerParams& L = hp_.layers[size_t(il)];
        Tensor* h = rms_norm(g, x, w.attn_norm, eps);
        Tensor* q = reshape(g, mul_mat(g, w.wq, h), {L.head_dim_k, L.n_head, T});
        Tensor* k = reshape(g, mul_mat(g, w.wk, h), {L.head_dim_k, L.n_head_kv, T});
        Tensor* v = mul_mat(g, w.wv, h);  // (n_head_kv * head_dim_v, T)
        const RopeParams rp{L.head_dim_k, ROPE_NEOX, L.rope_base, 1.0f};
        q = rope(g, q, pos, nullptr, rp);
        k = rope(g, k, pos, nullptr, rp);
        Tensor* rows = cache_rows(kv.ring_rows(int(il)));
        Tensor* kc = set_rows(g, kv.k(int(il)), reshape(g, k, {int64_t(L.head_dim_k) * L.n_head_kv, T}), rows);
        Tensor* vc = set_rows(g, kv.v(int(il)), v, rows);
        const AttentionParams ap{L.window, int32_t(kv.ring_rows(int(il))), L.n_head_kv, hp_.attn_scale, attn_softcap_};
        Tensor* a = attention(g, q, kc, vc, pos, seq, ap);  // (head_dim_v, n_head, T)
        Tensor* o = mul_mat(g, w.wo, reshape(g, a, {int64_t(L.head_dim_v) * L.n_head, T}));
        x = add(g, x, rms_norm(g, o, w.post_attn_norm, eps));

        h = rms_norm(g, x, w.ffn_norm, eps);
        Tensor* f = mul(g, gelu(g, mul_mat(g, w.ffn_gate, h)), mul_mat(g, w.ffn_up, h));
        x = add(g, x, rms_norm(g, mul_mat(g, w.ffn_down, f), w.post_ffw_norm, eps));
    }
    return output_head(g, ub, x, final_softcap_);
}

}  // namespace ls
