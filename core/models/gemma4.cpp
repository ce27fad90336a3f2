#include "core/models/gemma4.h"

#include <cfloat>
#include <cmath>
#include <optional>
#include <stdexcept>

#include "core/models/arch_keys.h"
#include "core/ir/ops.h"
#include "core/models/attention_block.h"
#include "core/models/ffn_block.h"
#include "core/rules/topk_rule.h"

namespace ls {

namespace {
[[noreturn]] void bad(const std::string& what) { throw std::runtime_error("gemma4: " + what); }
}  // namespace

void Gemma4::load_arch() {
    const GgufFile& f = *file_;
    const std::string a = "gemma4.";
    const ArchKeys keys(f, "gemma4");
    hp_.arch = "gemma4";
    hp_.n_embd = keys.get_int(ArchKey::EmbeddingLength);
    hp_.n_layer = keys.get_int(ArchKey::BlockCount);
    hp_.n_ctx_train = keys.get_int(ArchKey::ContextLength);
    hp_.rms_eps = float(keys.get_float(ArchKey::RmsEps, 1e-6));
    hp_.attn_scale = 1.0f;  // the q/k RMS norms replace the 1/sqrt(head_dim) scale
    const int64_t L = hp_.n_layer, E = hp_.n_embd;
    if (E <= 0 || L <= 0 || L > 4096) bad("inconsistent embedding_length / block_count in the GGUF metadata");

    // A per-layer value: a scalar for every layer or an array of one entry per layer.
    auto per_layer = [&](ArchKey k, std::optional<int64_t> def) {
        try {
            return keys.per_layer(k, L, def);
        } catch (const std::runtime_error& e) {
            bad(e.what());
        }
        return std::vector<int64_t>();
    };
    const int64_t n_head = keys.get_int(ArchKey::HeadCount);
    const std::vector<int64_t> n_head_kv = per_layer(ArchKey::HeadCountKv, n_head);
    const std::vector<int64_t> n_ff = per_layer(ArchKey::FeedForwardLength, std::nullopt);
    const int64_t hd_k = keys.get_int(ArchKey::KeyLength);
    const int64_t hd_v = keys.get_int(ArchKey::ValueLength, hd_k);
    const int64_t hd_k_swa = keys.get_int(ArchKey::KeyLengthSwa, hd_k);
    const int64_t hd_v_swa = keys.get_int(ArchKey::ValueLengthSwa, hd_k_swa);
    const int64_t window = keys.get_int(ArchKey::SlidingWindow);
    const int64_t n_shared = keys.get_int(ArchKey::SharedKvLayers, 0);
    const double base = keys.get_float(ArchKey::RopeFreqBase, 1e6);
    const double base_swa = keys.get_float(ArchKey::RopeFreqBaseSwa, 1e4);
    const int64_t rot = keys.get_int(ArchKey::RopeDimensionCount, hd_k);
    const int64_t rot_swa = keys.get_int(ArchKey::RopeDimensionCountSwa, hd_k_swa);
    n_embd_per_layer_ = keys.get_int(ArchKey::EmbeddingLengthPerLayerInput, 0);
    final_softcap_ = float(keys.get_float(ArchKey::FinalLogitSoftcapping, 30.0));
    n_expert_ = keys.get_int(ArchKey::ExpertCount, 0);
    n_expert_used_ = keys.get_int(ArchKey::ExpertUsedCount, 0);
    const int64_t n_ff_exp = keys.get_int(ArchKey::ExpertFeedForwardLength, 0);

    // Required, as llama.cpp requires it: the family's patterns differ (4:1 in E2B, 5:1 in
    // others), so no default would be right.
    if (!keys.find(ArchKey::SlidingWindowPattern)) bad("missing key '" + a + "attention.sliding_window_pattern'");
    const std::vector<bool> swa = keys.get_bool_array(ArchKey::SlidingWindowPattern);
    if (int64_t(swa.size()) != L)
        bad("attention.sliding_window_pattern has " + std::to_string(swa.size()) + " entries for " + std::to_string(L) +
            " layers");
    // Everything below is stored in 32-bit fields: refuse what would not fit rather than wrap.
    constexpr int64_t kMax = int64_t(1) << 30;
    for (int64_t v : {n_head, hd_k, hd_v, hd_k_swa, hd_v_swa, window, rot, rot_swa, n_embd_per_layer_, n_expert_,
                      n_expert_used_, n_ff_exp, hp_.n_embd})
        if (v > kMax) bad("a hyperparameter of " + std::to_string(v) + " is out of range (broken metadata)");
    for (const std::vector<int64_t>* arr : {&n_head_kv, &n_ff})
        for (int64_t v : *arr)
            if (v > kMax) bad("a per-layer hyperparameter of " + std::to_string(v) + " is out of range (broken metadata)");
    if (n_embd_per_layer_ * L > kMax) bad("embedding_length_per_layer_input x block_count is out of range (broken metadata)");
    if (n_head <= 0 || hd_k <= 0 || hd_v <= 0 || hd_k_swa <= 0 || hd_v_swa <= 0 || window <= 0 || n_shared < 0 ||
        n_shared >= L || rot <= 0 || rot > hd_k || rot % 2 || rot_swa <= 0 || rot_swa > hd_k_swa || rot_swa % 2 ||
        n_embd_per_layer_ < 0 || !std::isfinite(final_softcap_) || (final_softcap_ != 0.f && !(final_softcap_ >= FLT_MIN)))
        bad("inconsistent attention / rope / softcap hyperparameters in the GGUF metadata");
    if (hp_.n_ctx_train > 0 && window > hp_.n_ctx_train)
        bad("sliding window of " + std::to_string(window) + " tokens is larger than the model's context of " +
            std::to_string(hp_.n_ctx_train) + " (broken metadata)");
    if (n_expert_ > 0 && (n_expert_used_ < 1 || n_expert_used_ > n_expert_ || n_expert_used_ > kTopkMax || n_ff_exp <= 0))
        bad("inconsistent expert counts (expert_count " + std::to_string(n_expert_) + ", expert_used_count " +
            std::to_string(n_expert_used_) + ", expert_feed_forward_length " + std::to_string(n_ff_exp) + ")");

    const int64_t first_shared = L - n_shared;
    for (int64_t il = 0; il < L; ++il) {
        LayerParams lp;
        const bool local = swa[size_t(il)];
        lp.window = local ? int32_t(window) : 0;
        lp.rope_base = float(local ? base_swa : base);
        lp.n_head = int32_t(n_head);
        lp.n_head_kv = int32_t(n_head_kv[size_t(il)]);
        lp.head_dim_k = int32_t(local ? hd_k_swa : hd_k);
        lp.head_dim_v = int32_t(local ? hd_v_swa : hd_v);
        if (lp.n_head_kv <= 0 || n_head % lp.n_head_kv || n_ff[size_t(il)] <= 0)
            bad("layer " + std::to_string(il) + ": inconsistent head_count_kv / feed_forward_length");
        if (il >= first_shared) {
            // The last earlier layer of the same kind owns the cache this layer reads.
            for (int64_t src = first_shared - 1; src >= 0; --src)
                if (swa[size_t(src)] == local) { lp.kv_source = int32_t(src); break; }
            if (lp.kv_source < 0)
                bad("layer " + std::to_string(il) + " shares the KV cache of an earlier " +
                    (local ? "sliding" : "global") + " layer, but there is none");
            const LayerParams& S = hp_.layers[size_t(lp.kv_source)];
            if (S.n_head_kv != lp.n_head_kv || S.head_dim_k != lp.head_dim_k || S.head_dim_v != lp.head_dim_v)
                bad("layer " + std::to_string(il) + " has another KV geometry than layer " + std::to_string(lp.kv_source) +
                    ", whose cache it shares");
        }
        hp_.layers.push_back(lp);
    }
    hp_.n_ff = n_ff[0];

    bind_embeddings();
    bool any_global = false;
    for (const LayerParams& lp : hp_.layers) any_global = any_global || lp.window == 0;
    if (any_global) {  // proportional RoPE needs its factors (the converter always writes them)
        rope_freqs_ = host_f32("rope_freqs.weight", rot / 2);
    }
    const int64_t P = n_embd_per_layer_;
    if (P > 0) {
        // The converter trims token_embd to the tokenizer's vocabulary but not this table
        // (vocab_size_per_layer_input): any row count that covers every token id will do.
        const GgufTensorInfo* pt = f.find_tensor("per_layer_token_embd.weight");
        if (!pt) throw std::runtime_error("model is missing tensor 'per_layer_token_embd.weight'");
        if (pt->ne[1] < hp_.n_vocab)
            bad("per_layer_token_embd.weight has " + std::to_string(pt->ne[1]) + " rows for a vocabulary of " +
                std::to_string(hp_.n_vocab));
        ple_tok_embd_ = matmul_weight("per_layer_token_embd.weight", L * P, pt->ne[1]);
        ple_proj_ = matmul_weight("per_layer_model_proj.weight", E, L * P);
        ple_proj_norm_ = norm_weight("per_layer_proj_norm.weight", P);
    }
    for (int64_t il = 0; il < L; ++il) {
        const std::string p = "blk." + std::to_string(il) + ".";
        const LayerParams& Lp = hp_.layers[size_t(il)];
        const int64_t kd = Lp.head_dim_k, vd = Lp.head_dim_v, hkv = Lp.n_head_kv, F = n_ff[size_t(il)];
        Layer l{};
        l.attn_norm = norm_weight(p + "attn_norm.weight", E);
        l.wq = matmul_weight(p + "attn_q.weight", E, n_head * kd);
        l.q_norm = norm_weight(p + "attn_q_norm.weight", kd);
        if (Lp.kv_source < 0) {
            l.wk = matmul_weight(p + "attn_k.weight", E, hkv * kd);
            l.k_norm = norm_weight(p + "attn_k_norm.weight", kd);
            if (f.find_tensor(p + "attn_v.weight")) l.wv = matmul_weight(p + "attn_v.weight", E, hkv * vd);
            else if (vd != kd) bad("layer " + std::to_string(il) + " has no attn_v but value_length != key_length");
        }
        l.wo = matmul_weight(p + "attn_output.weight", n_head * vd, E);
        l.post_attn_norm = norm_weight(p + "post_attention_norm.weight", E);
        l.ffn_norm = norm_weight(p + "ffn_norm.weight", E);
        l.ffn_gate = matmul_weight(p + "ffn_gate.weight", E, F);
        l.ffn_up = matmul_weight(p + "ffn_up.weight", E, F);
        l.ffn_down = matmul_weight(p + "ffn_down.weight", F, E);
        l.post_ffw_norm = norm_weight(p + "post_ffw_norm.weight", E);
        if (n_expert_ > 0 && f.find_tensor(p + "ffn_gate_inp.weight")) {  // MoE layers: those with a router
            l.ffn_gate_inp = matmul_weight(p + "ffn_gate_inp.weight", E, n_expert_);
            l.router_scale = norm_weight(p + "ffn_gate_inp.scale", E);
            if (f.find_tensor(p + "ffn_down_exps.scale")) l.expert_scale = norm_weight(p + "ffn_down_exps.scale", n_expert_);
            l.experts.gate_up = expert_weight(p + "ffn_gate_up_exps.weight", E, 2 * n_ff_exp, n_expert_);
            l.experts.down = expert_weight(p + "ffn_down_exps.weight", n_ff_exp, E, n_expert_);
            l.experts.n_ff = n_ff_exp;
            l.experts.act = MoeAct::Gelu;
            l.pre_ffw_norm_2 = norm_weight(p + "pre_ffw_norm_2.weight", E);
            l.post_ffw_norm_1 = norm_weight(p + "post_ffw_norm_1.weight", E);
            l.post_ffw_norm_2 = norm_weight(p + "post_ffw_norm_2.weight", E);
        }
        if (P > 0) {
            l.inp_gate = matmul_weight(p + "inp_gate.weight", E, P);
            l.proj = matmul_weight(p + "proj.weight", P, E);
            l.post_norm = norm_weight(p + "post_norm.weight", E);
        }
        if (f.find_tensor(p + "layer_output_scale.weight")) l.out_scale = norm_weight(p + "layer_output_scale.weight", 1);
        l.rope_dims = int32_t(Lp.window > 0 ? rot_swa : rot);
        l.freq_factors = Lp.window == 0 && !rope_freqs_.empty();
        layers_.push_back(l);
    }
}

Tensor* Gemma4::build_graph(Graph& g, const Ubatch& ub, KvCache& kv) const {
    using namespace ops;
    const int64_t E = hp_.n_embd, L = hp_.n_layer, P = n_embd_per_layer_;
    const float eps = hp_.rms_eps;
    int64_t T = int64_t(ub.tokens.size());
    const int64_t n_out = int64_t(ub.out_idx.size());
    Tensor* tokens = g.input(DType::I32, {T}, ub.tokens.data(), "tokens");
    Tensor* pos = g.input(DType::I32, {T}, ub.pos.data(), "pos");
    Tensor* seq = g.input(DType::I32, {T}, ub.seq.data(), "seq");

    CacheRows cache_rows(g, ub);  // over the whole ubatch: rows are written before any narrowing
    RopeTables rope_tables(g, ub.pos);
    std::vector<int32_t> p_out;  // the positions of the output rows (rope_tables reads them)

    // Token rows scaled by sqrt(n_embd), given rows (an image's) not; at an image's places the
    // per-layer token rows are token 0's (the padding id HF puts there: Session zeroes them).
    Tensor* x = with_given_rows(g, ub, scale(g, get_rows(g, tok_embd_, tokens), std::sqrt(float(E))));  // (E, T)
    // Sliding layers of a "vision" model: an image's tokens see their whole image.
    const bool image_bidir = P == 0 && !ub.last_key.empty();
    Ubatch ub_out;  // after the narrowing: the output rows' positions and last keys
    std::unique_ptr<AttnKeys> attn_keys = image_bidir ? std::make_unique<AttnKeys>(g, ub, pos) : nullptr;
    // Per-layer inputs (P, L, T): (norm(W_ple x / sqrt(E)) + embd_ple(token) sqrt(P)) / sqrt(2).
    Tensor* pli = nullptr;
    if (P > 0) {
        Tensor* tok = scale(g, get_rows(g, ple_tok_embd_, tokens), std::sqrt(float(P)));
        Tensor* proj = scale(g, mul_mat(g, ple_proj_, x), 1.0f / std::sqrt(float(E)));
        proj = rms_norm(g, reshape(g, proj, {P, L, T}), ple_proj_norm_, eps);
        pli = scale(g, add(g, proj, reshape(g, tok, {P, L, T})), 1.0f / std::sqrt(2.0f));
    }

    // From the first KV-shared layer on nothing is written to the cache, so only the tokens
    // whose logits are wanted need to go on (their queries still read every cached key).
    bool narrowed = false;
    for (int64_t il = 0; il < L; ++il) {
        const Layer& w = layers_[size_t(il)];
        const LayerParams& Lp = hp_.layers[size_t(il)];
        if (Lp.kv_source >= 0 && !narrowed && n_out < T) {
            if (n_out == 0) return nullptr;  // the layers left write nothing
            narrowed = true;
            std::vector<int32_t> s_out;
            for (int32_t i : ub.out_idx) p_out.push_back(ub.pos[size_t(i)]), s_out.push_back(ub.seq[size_t(i)]);
            Tensor* idx = g.input(DType::I32, {n_out}, ub.out_idx.data(), "out_idx");
            x = get_rows(g, x, idx);
            if (pli) pli = reshape(g, get_rows(g, reshape(g, pli, {P * L, T}), idx), {P, L, n_out});
            pos = g.input(DType::I32, {n_out}, p_out.data(), "pos_out");
            seq = g.input(DType::I32, {n_out}, s_out.data(), "seq_out");
            T = n_out;
            rope_tables.reset(p_out);
            if (image_bidir) {
                ub_out.tokens.assign(size_t(n_out), 0);
                ub_out.pos = p_out;
                for (int32_t i : ub.out_idx) ub_out.last_key.push_back(ub.last_key[size_t(i)]);
                attn_keys = std::make_unique<AttnKeys>(g, ub_out, pos);
            }
        }
        const int64_t Dk = Lp.head_dim_k, Dv = Lp.head_dim_v, H = Lp.n_head, Hkv = Lp.n_head_kv;
        const RopeParams rp{w.rope_dims, ROPE_NEOX, Lp.rope_base, 1.0f};
        Tensor* rope_cs = rope_tables(rp, w.freq_factors ? &rope_freqs_ : nullptr);

        Tensor* h = rms_norm(g, x, w.attn_norm, eps);
        Tensor* q = reshape(g, mul_mat(g, w.wq, h), {Dk, H, T});
        q = rope(g, rms_norm(g, q, w.q_norm, eps), rope_cs, rp);
        Tensor *k = nullptr, *v = nullptr;
        if (Lp.kv_source < 0) {
            Tensor* k_raw = mul_mat(g, w.wk, h);  // (Hkv * Dk, T)
            v = w.wv ? mul_mat(g, w.wv, h) : k_raw;
            k = rope(g, rms_norm(g, reshape(g, k_raw, {Dk, Hkv, T}), w.k_norm, eps), rope_cs, rp);
            v = rms_norm(g, reshape(g, v, {Dv, Hkv, T}), nullptr, eps);
        }
        AttnKeys::Keys keys{pos, Lp.window};
        if (attn_keys && Lp.window > 0) keys = (*attn_keys)(Lp.window);
        Tensor* att = cached_attention(g, kv, cache_rows, int(il), q, k, v, keys.pos, seq, int32_t(Hkv), hp_.attn_scale,
                                       {.window = keys.window, .src = Lp.kv_source});  // (Dv, H, T)
        Tensor* o = mul_mat(g, w.wo, reshape(g, att, {Dv * H, T}));
        x = add(g, x, rms_norm(g, o, w.post_attn_norm, eps));

        Tensor* res = x;
        h = rms_norm(g, x, w.ffn_norm, eps);
        Tensor* f = gated_ffn(g, h, w.ffn_gate, w.ffn_up, w.ffn_down, GatedAct::Gelu);
        if (w.ffn_gate_inp) {
            // Router: softmax(W_r (norm(res) * scale / sqrt(E))), top k renormalised, each
            // weight times its expert's scale; the experts read their own norm of res.
            Tensor* r = scale(g, mul(g, rms_norm(g, res, nullptr, eps), w.router_scale), 1.0f / std::sqrt(float(E)));
            const int k = int(n_expert_used_);
            const MoeRoute route = softmax_topk(g, mul_mat(g, w.ffn_gate_inp, r), k, true);
            Tensor* ids = route.ids;
            Tensor* wts = route.wts;
            // wts[j, t] * scale[ids[j, t]]: the scales as one 1x1 matrix per expert, so that
            // mul_mat_id gathers them by the ids computed on the device (one product each).
            if (w.expert_scale) {
                Tensor* es = reshape(g, w.expert_scale, {1, 1, n_expert_});
                wts = reshape(g, mul_mat_id(g, es, reshape(g, wts, {1, k, T}), ids), {k, T});
            }
            Tensor* moe = moe_experts(g, w.experts, rms_norm(g, res, w.pre_ffw_norm_2, eps), ids, wts);
            f = add(g, rms_norm(g, f, w.post_ffw_norm_1, eps), rms_norm(g, moe, w.post_ffw_norm_2, eps));
        }
        x = add(g, res, rms_norm(g, f, w.post_ffw_norm, eps));

        if (pli) {
            Tensor* in = view_2d(g, pli, P, T, size_t(P * L) * 4, size_t(il * P) * 4);  // layer il's (P, T)
            Tensor* gt = mul(g, gelu(g, mul_mat(g, w.inp_gate, x)), in);
            x = add(g, x, rms_norm(g, mul_mat(g, w.proj, gt), w.post_norm, eps));
        }
        if (w.out_scale) x = mul(g, x, w.out_scale);
    }
    return output_head(g, ub, x, final_softcap_, narrowed);
}

}  // namespace ls
