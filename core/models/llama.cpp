#include "core/models/llama.h"

#include <cmath>
#include <stdexcept>

#include "core/models/arch_keys.h"
#include "core/ir/ops.h"
#include "core/models/attention_block.h"
#include "core/models/ffn_block.h"
#include "core/models/rope_scaling.h"
#include "core/rules/canon.h"
#include "core/rules/rope_rule.h"

namespace ls {

void Llama::load_arch() {
    const GgufFile& f = *file_;
    const std::string arch = f.get_string("general.architecture");
    const std::string a = arch + ".";
    const ArchKeys keys(f, arch);
    auto bad = [&](const std::string& what) { throw std::runtime_error(arch + ": " + what); };
    hp_.arch = arch;
    read_decoder_sizes(keys, 1e-5);
    // An appended NextN (multi-token prediction) layer is counted in block_count (glm4moe).
    const int64_t nextn = keys.get_int(ArchKey::NextnPredictLayers, 0);
    if (nextn < 0 || nextn >= hp_.n_layer) bad("nextn_predict_layers " + std::to_string(nextn) + " leaves no layer (broken metadata)");
    hp_.n_layer -= nextn;
    const int64_t n_head = keys.get_int(ArchKey::HeadCount);
    const int64_t n_head_kv = keys.get_int(ArchKey::HeadCountKv, n_head);
    if (hp_.n_embd <= 0 || hp_.n_layer <= 0 || hp_.n_layer > 4096 || n_head <= 0 || n_head_kv <= 0 || n_head % n_head_kv)
        bad("inconsistent embedding_length / block_count / head counts in the GGUF metadata");
    const int64_t hd_k = keys.get_int(ArchKey::KeyLength, hp_.n_embd / n_head);
    const int64_t hd_v = keys.get_int(ArchKey::ValueLength, hd_k);
    const int64_t n_rot = keys.get_int(ArchKey::RopeDimensionCount, hd_k);
    const int64_t window = keys.get_int(ArchKey::SlidingWindow, 0);
    n_expert_ = keys.get_int(ArchKey::ExpertCount, 0);
    hp_.n_ff = n_expert_ > 0 ? keys.get_int(ArchKey::ExpertFeedForwardLength, keys.get_int(ArchKey::FeedForwardLength, 0))
                             : keys.get_int(ArchKey::FeedForwardLength);
    // glm4moe: dense layers first (feed_forward_length), then routed ones with shared experts.
    const int64_t n_dense = n_expert_ > 0 ? keys.get_int(ArchKey::LeadingDenseBlockCount, 0) : 0;
    const int64_t F_dense = n_dense > 0 ? keys.get_int(ArchKey::FeedForwardLength) : hp_.n_ff;
    const int64_t n_shared = n_expert_ > 0 ? keys.get_int(ArchKey::ExpertSharedCount, 0) : 0;
    constexpr int64_t kMax = int64_t(1) << 30;
    for (int64_t v : {hp_.n_embd, n_head, hd_k, hd_v, n_rot, window, hp_.n_ff, n_expert_, n_dense, F_dense, n_shared})
        if (v < 0 || v > kMax) bad("a hyperparameter of " + std::to_string(v) + " is out of range (broken metadata)");
    if (hd_k <= 0 || hd_v <= 0 || n_rot <= 0 || n_rot > hd_k || n_rot % 2 || hp_.n_ff <= 0 || F_dense <= 0)
        bad("inconsistent head / rope / feed-forward sizes in the GGUF metadata");
    if (n_expert_ > 0) router_ = read_moe_router(keys, n_expert_, true);
    // LongRoPE (Phi-3.5-mini, Phi-4-mini): one set of per-pair divisors for contexts up to the
    // original length, another beyond it; per-layer copies are not what the converter writes.
    if (f.find_tensor("blk.0.rope_factors_long.weight") || f.find_tensor("blk.0.rope_factors_short.weight"))
        bad("per-layer LongRoPE factors (blk.N.rope_factors_long) are not supported");
    if (bool(f.find_tensor("rope_factors_long.weight")) != bool(f.find_tensor("rope_factors_short.weight")))
        bad("LongRoPE needs both rope_factors_long and rope_factors_short");
    if (hp_.n_ctx_train > 0 && window > hp_.n_ctx_train && arch != "phi3")
        bad("sliding window of " + std::to_string(window) + " tokens is larger than the model's context of " +
            std::to_string(hp_.n_ctx_train) + " (broken metadata)");
    // Granite's multipliers (0: the key is absent, nothing is scaled).
    embd_scale_ = float(keys.get_float(ArchKey::EmbeddingScale, 0.0));
    residual_scale_ = float(keys.get_float(ArchKey::ResidualScale, 0.0));
    logit_scale_ = float(keys.get_float(ArchKey::LogitScale, 0.0));
    for (float v : {embd_scale_, residual_scale_, logit_scale_})
        if (!std::isfinite(v) || v < 0) bad("embedding_scale, residual_scale and logit_scale must be finite and not negative");
    // What this class does not build, refused rather than left out: Granite MoE's shared
    // experts, and Granite without rope (its rope.scaling.finetuned switch).
    if (keys.get_int(ArchKey::ExpertSharedFeedForwardLength, 0) != 0) bad("shared experts (expert_shared_feed_forward_length) are not supported");
    if (!keys.get_bool(ArchKey::RopeScalingFinetuned, true)) bad("a model without rope (rope.scaling.finetuned false) is not supported");
    // OLMo 3's sliding layers come in a pattern (attention.sliding_window_pattern), which
    // this class does not build: every layer here has the one window.
    if (flavor_.post_norm && keys.find(ArchKey::SlidingWindow)) bad("sliding-window layers (OLMo 3) are not supported");
    temp_beta_ = float(keys.get_float(ArchKey::TemperatureScale, 0.0));
    if (!std::isfinite(temp_beta_) || temp_beta_ < 0) bad("attention.temperature_scale must be a finite number >= 0");
    if (temp_beta_ != 0.f) {
        // (llama.cpp's floor: the YaRN original context, as transformers' original_max_position_embeddings)
        temp_floor_ = keys.get_int(ArchKey::RopeScalingOrigCtx, 0);
        if (temp_floor_ <= 0) bad("attention.temperature_scale needs rope.scaling.original_context_length");
    }
    const double scale = keys.get_float(ArchKey::AttentionScale, 0.0);
    hp_.attn_scale = scale != 0.0 ? float(scale) : 1.0f / std::sqrt(float(hd_k));
    if (!std::isfinite(hp_.attn_scale) || hp_.attn_scale <= 0) bad("attention.scale must be a positive number");
    const float base = float(keys.get_float(ArchKey::RopeFreqBase, 10000.0));
    if (!(base > 1.0f) || !std::isfinite(base)) bad("rope.freq_base must be a finite number above 1");
    rope_ = rope_params_from_gguf(keys, int32_t(n_rot), flavor_.rope_mode, base);
    if (arch == "qwen3vl" || arch == "qwen3vlmoe") {
        // Interleaved M-RoPE over pairs (time, height, width): text takes its position on
        // every axis (plain NeoX rope), an image's tokens their grid places (Session::rope_positions).
        mrope_axes_ = mrope_axes_from_gguf(f, arch, n_rot);
        if (mrope_axes_.empty()) bad("missing " + a + "rope.dimension_sections (M-RoPE sections)");
        if (rope_.ext_factor != 0.f || rope_.freq_scale != 1.f) bad("M-RoPE with rope scaling is not supported");
        n_deepstack_ = f.find(a + "n_deepstack_layers") ? f.get_int(a + "n_deepstack_layers") : 0;
        if (n_deepstack_ < 0 || n_deepstack_ >= hp_.n_layer)
            bad("n_deepstack_layers " + std::to_string(n_deepstack_) + " must be below the " + std::to_string(hp_.n_layer) + " layers");
        hp_.n_embd_in = hp_.n_embd * (1 + n_deepstack_);
    }
    // (phi3's converter writes the config's sliding_window, 0 or none for Phi-4; a window as
    // long as the context, Phi-3.5's 262144, is full attention.)
    const int64_t eff_window = hp_.n_ctx_train > 0 && window >= hp_.n_ctx_train ? 0 : window;
    for (int64_t il = 0; il < hp_.n_layer; ++il) {
        hp_.layers.push_back({.window = int32_t(eff_window), .rope_base = base, .rope_scale = rope_.freq_scale, .n_head = int32_t(n_head),
                              .n_head_kv = int32_t(n_head_kv), .head_dim_k = int32_t(hd_k), .head_dim_v = int32_t(hd_v)});
    }

    const int64_t E = hp_.n_embd, F = hp_.n_ff;
    bind_embeddings();
    // Llama 3's scaling: per-pair divisors of the angle (llama.cpp's converter writes them).
    if (f.find_tensor("rope_freqs.weight")) {
        rope_freqs_ = host_f32("rope_freqs.weight", n_rot / 2);
    }
    // LongRoPE: the divisors of the angles, short or long by the session's context against the
    // original one (as llama.cpp chooses: per context, so every position of every sequence is
    // rotated alike), cos and sin times rope.scaling.attn_factor (the converter's
    // sqrt(1 + ln(scale) / ln(original context))).
    if (f.find_tensor("rope_factors_long.weight")) {
        if (!rope_freqs_.empty()) bad("rope_freqs and LongRoPE factors together");
        long_factors_ = host_f32("rope_factors_long.weight", n_rot / 2);
        short_factors_ = host_f32("rope_factors_short.weight", n_rot / 2);
        for (const std::vector<float>* v : {&long_factors_, &short_factors_})
            for (float x : *v)
                if (!(x > 0) || !std::isfinite(x)) bad("LongRoPE factors must be positive numbers");
        longrope_orig_ctx_ = keys.get_int(ArchKey::RopeScalingOrigCtx, 0);
        if (longrope_orig_ctx_ <= 0) bad("LongRoPE needs rope.scaling.original_context_length");
        const double af = keys.get_float(ArchKey::RopeScalingAttnFactor, 1.0);
        if (!(af > 0) || !std::isfinite(af)) bad("rope.scaling.attn_factor must be a positive number");
        rope_.attn_factor = float(af);
    }
    for (int64_t il = 0; il < hp_.n_layer; ++il) {
        const std::string p = "blk." + std::to_string(il) + ".";
        Layer l{};
        if (f.find_tensor(p + "attn_qkv.weight")) {
            // phi3's fused projection: split by views in the graph (build_graph).
            l.wqkv = matmul_weight(p + "attn_qkv.weight", E, hd_k * (n_head + 2 * n_head_kv));
            if (hd_v != hd_k) bad("a fused attn_qkv with value heads of another size is not supported");
            l.at = {nullptr, nullptr, nullptr, matmul_weight(p + "attn_output.weight", hd_v * n_head, E)};
            l.at.bo = f.find_tensor(p + "attn_output.bias") ? norm_weight(p + "attn_output.bias", E) : nullptr;
        } else {
            l.at = attn_weights(p, hp_.layers[size_t(il)], Biases::Optional);
        }
        if (flavor_.qk_norm == QkNorm::PerHead ||
            (flavor_.qk_norm == QkNorm::PerHeadIfPresent && f.find_tensor(p + "attn_q_norm.weight"))) {
            l.q_norm = norm_weight(p + "attn_q_norm.weight", hd_k);
            l.k_norm = norm_weight(p + "attn_k_norm.weight", hd_k);
        } else if (flavor_.qk_norm == QkNorm::Whole) {
            l.q_norm = norm_weight(p + "attn_q_norm.weight", hd_k * n_head);
            l.k_norm = norm_weight(p + "attn_k_norm.weight", hd_k * n_head_kv);
        }
        if (flavor_.post_norm) {
            l.attn_post_norm = norm_weight(p + "post_attention_norm.weight", E);
            l.ffn_post_norm = norm_weight(p + "post_ffw_norm.weight", E);
        } else {
            l.attn_norm = norm_weight(p + "attn_norm.weight", E);
            // (glm4moe's converter keeps HF's name for the norm before the FFN)
            l.ffn_norm = norm_weight(p + (f.find_tensor(p + "ffn_norm.weight") || !f.find_tensor(p + "post_attention_norm.weight")
                                              ? "ffn_norm.weight"
                                              : "post_attention_norm.weight"),
                                     E);
        }
        if (n_expert_ > 0 && il >= n_dense) {
            l.ffn_gate_inp = matmul_weight(p + "ffn_gate_inp.weight", E, n_expert_);
            l.exp_probs_b = weight(p + "exp_probs_b.bias", {n_expert_}, false);
            if (n_shared > 0) {
                l.sh_gate = matmul_weight(p + "ffn_gate_shexp.weight", E, F * n_shared);
                l.sh_up = matmul_weight(p + "ffn_up_shexp.weight", E, F * n_shared);
                l.sh_down = matmul_weight(p + "ffn_down_shexp.weight", F * n_shared, E);
            }
            l.experts.gate = expert_weight(p + "ffn_gate_exps.weight", E, F, n_expert_);
            l.experts.up = expert_weight(p + "ffn_up_exps.weight", E, F, n_expert_);
            l.experts.down = expert_weight(p + "ffn_down_exps.weight", F, E, n_expert_);
            l.experts.n_ff = F;
            l.experts.act = MoeAct::Silu;
        } else if (!f.find_tensor(p + "ffn_gate.weight") && f.find_tensor(p + "ffn_up.weight")) {
            // phi3: gate and up in one matrix, gate rows first (llama.cpp's SWIGLU split)
            l.ffn_up = matmul_weight(p + "ffn_up.weight", E, 2 * F);
            l.ffn_down = matmul_weight(p + "ffn_down.weight", F, E);
        } else {
            l.ffn_gate = matmul_weight(p + "ffn_gate.weight", E, F_dense);
            l.ffn_up = matmul_weight(p + "ffn_up.weight", E, F_dense);
            l.ffn_down = matmul_weight(p + "ffn_down.weight", F_dense, E);
            l.ffn_gate_b = weight(p + "ffn_gate.bias", {F_dense}, false);
            l.ffn_up_b = weight(p + "ffn_up.bias", {F_dense}, false);
            l.ffn_down_b = weight(p + "ffn_down.bias", {E}, false);
        }
        layers_.push_back(l);
    }
}

// SwiGLU, or the experts: router softmax over all experts, the k most probable, their
// probabilities renormalised to sum 1 unless expert_weights_norm says otherwise.
Tensor* Llama::ffn(Graph& g, Tensor* h, int64_t il) const {
    using namespace ops;
    const Layer& w = layers_[size_t(il)];
    auto biased = [&](Tensor* y, Tensor* b) { return b ? add(g, y, b) : y; };
    if (!w.ffn_gate_inp && !w.ffn_gate) {
        // gate rows then up rows per token: views of its halves (the silu of the whole, as
        // moe_experts does for a fused gate_up)
        const int64_t T = h->ne[1], F = hp_.n_ff;
        Tensor* gu = mul_mat(g, w.ffn_up, h);  // (2F, T)
        const size_t rs = size_t(2 * F) * 4;
        return mul_mat(g, w.ffn_down, mul(g, view_2d(g, silu(g, gu), F, T, rs, 0), view_2d(g, gu, F, T, rs, size_t(F) * 4)));
    }
    if (!w.ffn_gate_inp)
        return biased(mul_mat(g, w.ffn_down, mul(g, silu(g, biased(mul_mat(g, w.ffn_gate, h), w.ffn_gate_b)),
                                                     biased(mul_mat(g, w.ffn_up, h), w.ffn_up_b))),
                      w.ffn_down_b);
    const MoeRoute r = route_experts(g, router_, w.ffn_gate_inp, w.exp_probs_b, h);
    Tensor* f = moe_experts(g, w.experts, h, r.ids, r.wts);
    return w.sh_gate ? add(g, f, gated_ffn(g, h, w.sh_gate, w.sh_up, w.sh_down, GatedAct::Silu)) : f;
}

Tensor* Llama::build_graph(Graph& g, const Ubatch& ub, KvCache& kv) const {
    using namespace ops;
    const int64_t T = int64_t(ub.tokens.size());
    const float eps = hp_.rms_eps;
    Tensor* tokens = g.input(DType::I32, {T}, ub.tokens.data(), "tokens");
    Tensor* pos = g.input(DType::I32, {T}, ub.pos.data(), "pos");
    Tensor* seq = g.input(DType::I32, {T}, ub.seq.data(), "seq");
    CacheRows cache_rows(g, ub);
    const std::vector<float>* factors = !rope_freqs_.empty() ? &rope_freqs_
                                        : long_factors_.empty() ? nullptr
                                        : kv.config().n_ctx > longrope_orig_ctx_ ? &long_factors_
                                                                                   : &short_factors_;
    // M-RoPE (qwen3vl): a ubatch without its positions (built by hand, not by a Session) is
    // text, every axis at its position: plain rope. Image rows need them.
    const bool mrope = !mrope_axes_.empty() && !ub.rope_pos.empty();
    if (mrope && int64_t(ub.rope_pos.size()) != 3 * T) throw std::logic_error(hp_.arch + ": M-RoPE positions of the wrong size");
    if (!mrope && !mrope_axes_.empty() && !ub.embd_at.empty())
        throw std::logic_error(hp_.arch + ": image rows without M-RoPE positions (Session::rope_positions)");
    Tensor* rope_cs = mrope ? rope_table_axes(g, ub.rope_pos.data(), 3, T, rope_, mrope_axes_, rope_inv_freq(rope_.freq_base, rope_.n_dims))
                            : RopeTables(g, ub.pos)(rope_, factors);
    // Llama 4's attention temperature: one factor per token, from its position on the host
    // (det_log1p: the same bits on every machine), multiplying the roped queries.
    Tensor* q_temp = nullptr;
    if (temp_beta_ != 0.f) {
        std::vector<float> temps(static_cast<size_t>(T));
        for (int64_t i = 0; i < T; ++i) temps[size_t(i)] = 1.0f + temp_beta_ * det_log1p(float(int64_t(ub.pos[size_t(i)]) / temp_floor_));
        q_temp = g.input(DType::F32, {1, 1, T}, temps.data(), "attn_temperature");  // (copied now)
    }
    auto biased = [&](Tensor* y, Tensor* b) { return b ? add(g, y, b) : y; };

    auto residual = [&](Tensor* y) { return residual_scale_ != 0.f ? scale(g, y, residual_scale_) : y; };

    Tensor* x = get_rows(g, tok_embd_, tokens);  // (E, T)
    if (embd_scale_ != 0.f) x = scale(g, x, embd_scale_);
    x = with_given_rows(g, ub, x, hp_.given_width());  // (an image's rows, as given)
    // Deepstack: per layer d < n_deepstack_, the (E, T) rows added after it, each image token's
    // row d + 1, zeros elsewhere (adding +0 leaves a text token's state as it is).
    std::vector<Tensor*> deepstack;
    if (n_deepstack_ > 0 && !ub.embd_at.empty()) {
        const int64_t E = hp_.n_embd, W = hp_.given_width();
        for (int64_t d = 0; d < n_deepstack_; ++d) {
            std::vector<float> rows(size_t(E * T), 0.0f);
            for (size_t i = 0; i < ub.embd_at.size(); ++i)
                std::copy_n(ub.embd.begin() + ptrdiff_t(int64_t(i) * W + (d + 1) * E), E, rows.begin() + ptrdiff_t(ub.embd_at[i]) * E);
            deepstack.push_back(g.input(DType::F32, {E, T}, rows.data(), "deepstack_rows"));  // (copied now)
        }
    }
    for (int64_t il = 0; il < hp_.n_layer; ++il) {
        const Layer& w = layers_[size_t(il)];
        const LayerParams& L = hp_.layers[size_t(il)];
        Tensor* h = w.attn_norm ? rms_norm(g, x, w.attn_norm, eps) : x;
        Tensor *q, *k, *v;
        if (w.wqkv) {
            // phi3's fused projection: each token's q rows, k rows, v rows, made contiguous
            // (rope needs packed heads)
            Tensor* qkv = mul_mat(g, w.wqkv, h);
            const int64_t nq = int64_t(L.head_dim_k) * L.n_head, nk = int64_t(L.head_dim_k) * L.n_head_kv;
            const size_t rs = size_t(nq + 2 * nk) * 4;
            q = cont(g, view_2d(g, qkv, nq, T, rs, 0));
            k = cont(g, view_2d(g, qkv, nk, T, rs, size_t(nq) * 4));
            v = cont(g, view_2d(g, qkv, nk, T, rs, size_t(nq + nk) * 4));
        } else {
            q = biased(mul_mat(g, w.at.wq, h), w.at.bq);  // (n_head * head_dim_k, T)
            k = biased(mul_mat(g, w.at.wk, h), w.at.bk);
            v = biased(mul_mat(g, w.at.wv, h), w.at.bv);  // (n_head_kv * head_dim_v, T)
        }
        if (flavor_.qk_norm == QkNorm::Whole) {
            q = rms_norm(g, q, w.q_norm, eps);
            k = rms_norm(g, k, w.k_norm, eps);
        }
        q = reshape(g, q, {L.head_dim_k, L.n_head, T});
        k = reshape(g, k, {L.head_dim_k, L.n_head_kv, T});
        if (w.q_norm && flavor_.qk_norm != QkNorm::Whole) {
            q = rms_norm(g, q, w.q_norm, eps);
            k = rms_norm(g, k, w.k_norm, eps);
        }
        q = rope(g, q, rope_cs, rope_);
        k = rope(g, k, rope_cs, rope_);
        if (q_temp) q = mul(g, q, q_temp);
        Tensor* a = cached_attention(g, kv, cache_rows, int(il), q, k, v, pos, seq, L.n_head_kv, hp_.attn_scale,
                                     {.window = L.window});  // (head_dim_v, n_head, T)
        Tensor* o = biased(mul_mat(g, w.at.wo, reshape(g, a, {int64_t(L.head_dim_v) * L.n_head, T})), w.at.bo);
        if (w.attn_post_norm) o = rms_norm(g, o, w.attn_post_norm, eps);
        x = add(g, x, residual(o));
        Tensor* f = ffn(g, w.ffn_norm ? rms_norm(g, x, w.ffn_norm, eps) : x, il);
        if (w.ffn_post_norm) f = rms_norm(g, f, w.ffn_post_norm, eps);
        x = add(g, x, residual(f));
        if (size_t(il) < deepstack.size()) x = add(g, x, deepstack[size_t(il)]);
    }
    Tensor* out = output_head(g, ub, x);
    // (hidden states for embeddings are not logits: they are not divided)
    if (out && logit_scale_ != 0.f && !ub.hidden) out = scale(g, out, 1.0f / logit_scale_);
    return out;
}

}  // namespace ls
