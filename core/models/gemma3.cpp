#include "core/models/gemma3.h"

#include <cmath>
#include <stdexcept>

#include "core/ir/ops.h"

namespace ls {

void Gemma3::load_arch() {
    const GgufFile& f = *file_;
    const std::string a = "gemma3.";
    hp_.arch = "gemma3";
    hp_.n_embd = f.get_int(a + "embedding_length");
    hp_.n_layer = f.get_int(a + "block_count");
    hp_.n_ff = f.get_int(a + "feed_forward_length");
    hp_.n_ctx_train = f.get_int(a + "context_length");
    hp_.rms_eps = float(f.get_float(a + "attention.layer_norm_rms_epsilon", 1e-6));
    const int64_t n_head = f.get_int(a + "attention.head_count");
    const int64_t n_head_kv = f.get_int(a + "attention.head_count_kv", n_head);
    const int64_t hd_k = f.get_int(a + "attention.key_length", hp_.n_embd / n_head);
    const int64_t hd_v = f.get_int(a + "attention.value_length", hd_k);
    const int64_t window = f.get_int(a + "attention.sliding_window", 0);
    const double base_global = f.get_float(a + "rope.freq_base", 1e6);
    double scale_global = 1.0;
    if (f.get_string(a + "rope.scaling.type", "none") == "linear")
        scale_global = 1.0 / f.get_float(a + "rope.scaling.factor", 1.0);
    if (hp_.n_embd <= 0 || hp_.n_layer <= 0 || hp_.n_ff <= 0 || n_head <= 0 || n_head_kv <= 0 || n_head % n_head_kv ||
        hd_k <= 0 || hd_v <= 0 || hd_k % 2 || window < 0)
        throw std::runtime_error("gemma3: inconsistent hyperparameters in the GGUF metadata");
    if (hp_.n_ctx_train > 0 && window > hp_.n_ctx_train)
        throw std::runtime_error("gemma3: sliding window of " + std::to_string(window) + " tokens is larger than the model's context of " +
                                 std::to_string(hp_.n_ctx_train) + " (broken metadata)");
    // The 27B scales queries by 1/sqrt(n_embd / n_head); the others by 1/sqrt(head_dim).
    hp_.attn_scale = hp_.n_layer == 62 ? 1.0f / std::sqrt(float(hp_.n_embd / n_head)) : 1.0f / std::sqrt(float(hd_k));
    for (int64_t il = 0; il < hp_.n_layer; ++il) {
        LayerParams L;
        const bool local = il % 6 < 5;  // five sliding-window layers, then one global
        L.window = local ? int32_t(window) : 0;
        // Local layers use base 10000 and ignore rope scaling.
        L.rope_base = local ? 10000.f : float(base_global);
        L.rope_scale = local ? 1.f : float(scale_global);
        L.n_head = int32_t(n_head);
        L.n_head_kv = int32_t(n_head_kv);
        L.head_dim_k = int32_t(hd_k);
        L.head_dim_v = int32_t(hd_v);
        hp_.layers.push_back(L);
    }

    const int64_t E = hp_.n_embd;
    bind_embeddings();
    for (int64_t il = 0; il < hp_.n_layer; ++il) {
        const std::string p = "blk." + std::to_string(il) + ".";
        Layer l;
        l.attn_norm = norm_weight(p + "attn_norm.weight", E);
        l.wq = matmul_weight(p + "attn_q.weight", E, n_head * hd_k);
        l.wk = matmul_weight(p + "attn_k.weight", E, n_head_kv * hd_k);
        l.wv = matmul_weight(p + "attn_v.weight", E, n_head_kv * hd_v);
        l.q_norm = norm_weight(p + "attn_q_norm.weight", hd_k);
        l.k_norm = norm_weight(p + "attn_k_norm.weight", hd_k);
        l.wo = matmul_weight(p + "attn_output.weight", n_head * hd_v, E);
        l.post_attn_norm = norm_weight(p + "post_attention_norm.weight", E);
        l.ffn_norm = norm_weight(p + "ffn_norm.weight", E);
        l.ffn_gate = matmul_weight(p + "ffn_gate.weight", E, hp_.n_ff);
        l.ffn_up = matmul_weight(p + "ffn_up.weight", E, hp_.n_ff);
        l.ffn_down = matmul_weight(p + "ffn_down.weight", hp_.n_ff, E);
        l.post_ffw_norm = norm_weight(p + "post_ffw_norm.weight", E);
        layers_.push_back(l);
    }
}

Tensor* Gemma3::build_graph(Graph& g, const Ubatch& ub, KvCache& kv) const {
    using namespace ops;
    const int64_t T = int64_t(ub.tokens.size()), E = hp_.n_embd;
    const float eps = hp_.rms_eps;
    Tensor* tokens = g.input(DType::I32, {T}, ub.tokens.data(), "tokens");
    Tensor* pos = g.input(DType::I32, {T}, ub.pos.data(), "pos");
    Tensor* seq = g.input(DType::I32, {T}, ub.seq.data(), "seq");

    CacheRows cache_rows(g, ub);

    Tensor* x = scale(g, get_rows(g, tok_embd_, tokens), std::sqrt(float(E)));  // (E, T)
    for (int64_t il = 0; il < hp_.n_layer; ++il) {
        const Layer& w = layers_[il];
        const LayerParams& L = hp_.layers[il];
        Tensor* h = rms_norm(g, x, w.attn_norm, eps);
        Tensor* q = reshape(g, mul_mat(g, w.wq, h), {L.head_dim_k, L.n_head, T});
        Tensor* k = reshape(g, mul_mat(g, w.wk, h), {L.head_dim_k, L.n_head_kv, T});
        Tensor* v = mul_mat(g, w.wv, h);  // (n_head_kv * head_dim_v, T)
        q = rms_norm(g, q, w.q_norm, eps);
        k = rms_norm(g, k, w.k_norm, eps);
        const RopeParams rp{L.head_dim_k, ROPE_NEOX, L.rope_base, L.rope_scale};
        q = rope(g, q, pos, nullptr, rp);
        k = rope(g, k, pos, nullptr, rp);
        Tensor* rows = cache_rows(kv.ring_rows(int(il)));
        Tensor* kc = set_rows(g, kv.k(int(il)), reshape(g, k, {L.head_dim_k * L.n_head_kv, T}), rows);
        Tensor* vc = set_rows(g, kv.v(int(il)), v, rows);
        const AttentionParams ap{L.window, int32_t(kv.ring_rows(int(il))), L.n_head_kv, hp_.attn_scale, 0.f};
        Tensor* a = attention(g, q, kc, vc, pos, seq, ap);  // (head_dim_v, n_head, T)
        Tensor* o = mul_mat(g, w.wo, reshape(g, a, {int64_t(L.head_dim_v) * L.n_head, T}));
        x = add(g, x, rms_norm(g, o, w.post_attn_norm, eps));

        h = rms_norm(g, x, w.ffn_norm, eps);
        Tensor* f = mul(g, gelu(g, mul_mat(g, w.ffn_gate, h)), mul_mat(g, w.ffn_up, h));
        f = mul_mat(g, w.ffn_down, f);
        x = add(g, x, rms_norm(g, f, w.post_ffw_norm, eps));
    }
    return output_head(g, ub, x);
}

}  // namespace ls
