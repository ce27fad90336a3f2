#include "core/models/gpt_oss.h"

#include <cmath>
#include <stdexcept>

#include "core/models/arch_keys.h"
#include "core/ir/ops.h"
#include "core/models/attention_block.h"
#include "core/models/rope_scaling.h"
#include "core/rules/topk_rule.h"

namespace ls {

namespace {
[[noreturn]] void bad(const std::string& what) { throw std::runtime_error("gpt-oss: " + what); }
}  // namespace

void GptOss::load_arch() {
    const GgufFile& f = *file_;
    const std::string a = "gpt-oss.";
    const ArchKeys keys(f, "gpt-oss");
    hp_.arch = "gpt-oss";
    read_decoder_sizes(keys, 1e-5);
    const int64_t n_head = keys.get_int(ArchKey::HeadCount);
    const int64_t n_head_kv = keys.get_int(ArchKey::HeadCountKv, n_head);
    const int64_t hd = keys.get_int(ArchKey::KeyLength, 64);
    const int64_t hd_v = keys.get_int(ArchKey::ValueLength, hd);
    const int64_t window = keys.get_int(ArchKey::SlidingWindow);
    const int64_t period = keys.get_int(ArchKey::SlidingWindowPattern, 2);
    n_expert_ = keys.get_int(ArchKey::ExpertCount);
    n_expert_used_ = keys.get_int(ArchKey::ExpertUsedCount);
    hp_.n_ff = keys.get_int(ArchKey::ExpertFeedForwardLength);
    constexpr int64_t kMax = int64_t(1) << 30;
    for (int64_t v : {hp_.n_embd, n_head, n_head_kv, hd, hd_v, window, period, n_expert_, hp_.n_ff})
        if (v > kMax) bad("a hyperparameter of " + std::to_string(v) + " is out of range (broken metadata)");
    if (hp_.n_embd <= 0 || hp_.n_layer <= 0 || hp_.n_layer > 4096 || n_head <= 0 || n_head_kv <= 0 || n_head % n_head_kv ||
        hd <= 0 || hd % 2 || hd_v != hd || window <= 0 || period < 1 || hp_.n_ff <= 0)
        bad("inconsistent hyperparameters in the GGUF metadata");
    if (n_expert_ < 1 || n_expert_used_ < 1 || n_expert_used_ > n_expert_ || n_expert_used_ > kTopkMax)
        bad("inconsistent expert counts (expert_count " + std::to_string(n_expert_) + ", expert_used_count " +
            std::to_string(n_expert_used_) + ")");
    if (hp_.n_ctx_train > 0 && window > hp_.n_ctx_train)
        bad("sliding window of " + std::to_string(window) + " tokens is larger than the model's context of " +
            std::to_string(hp_.n_ctx_train) + " (broken metadata)");
    hp_.attn_scale = 1.0f / std::sqrt(float(hd));
    const float base = float(keys.get_float(ArchKey::RopeFreqBase, 150000.0));
    if (!(base > 1.0f) || !std::isfinite(base)) bad("rope.freq_base must be a finite number above 1");
    // gpt-oss's YaRN range is not rounded to whole pairs (its config: truncate false; OpenAI's
    // own implementation likewise). llama.cpp rounds it, which moves the ramp by up to a pair.
    rope_ = rope_params_from_gguf(keys, int32_t(hd), ROPE_NEOX, base, RopeScalingOptions{.yarn_truncate = false});
    for (int64_t il = 0; il < hp_.n_layer; ++il) {
        const int32_t w = il % period < period - 1 ? int32_t(window) : 0;  // the even layers slide
        hp_.layers.push_back({.window = w, .rope_base = base, .rope_scale = rope_.freq_scale, .n_head = int32_t(n_head),
                              .n_head_kv = int32_t(n_head_kv), .head_dim_k = int32_t(hd), .head_dim_v = int32_t(hd)});
    }

    const int64_t E = hp_.n_embd, F = hp_.n_ff, X = n_expert_;
    bind_embeddings();
    auto f32 = [&](Tensor* t, const std::string& name) {
        if (t->type != DType::F32) bad(name + " must be f32");
        return t;
    };
    for (int64_t il = 0; il < hp_.n_layer; ++il) {
        const std::string p = "blk." + std::to_string(il) + ".";
        Layer l{};
        l.attn_norm = norm_weight(p + "attn_norm.weight", E);
        l.at = attn_weights(p, hp_.layers[size_t(il)], Biases::Required);
        l.sinks = f32(weight(p + "attn_sinks.weight", {n_head}), p + "attn_sinks.weight");
        l.post_attn_norm = norm_weight(p + "post_attention_norm.weight", E);
        l.ffn_gate_inp = matmul_weight(p + "ffn_gate_inp.weight", E, X);
        l.ffn_gate_inp_b = norm_weight(p + "ffn_gate_inp.bias", X);
        MoeExperts& ex = l.experts;
        ex.gate = expert_weight(p + "ffn_gate_exps.weight", E, F, X);
        ex.up = expert_weight(p + "ffn_up_exps.weight", E, F, X);
        ex.down = expert_weight(p + "ffn_down_exps.weight", F, E, X);
        ex.gate_b = f32(weight(p + "ffn_gate_exps.bias", {F, X}), p + "ffn_gate_exps.bias");
        ex.up_b = f32(weight(p + "ffn_up_exps.bias", {F, X}), p + "ffn_up_exps.bias");
        ex.down_b = f32(weight(p + "ffn_down_exps.bias", {E, X}), p + "ffn_down_exps.bias");
        ex.n_ff = F;
        ex.act = MoeAct::SwigluOai;
        layers_.push_back(l);
    }
}

Tensor* GptOss::build_graph(Graph& g, const Ubatch& ub, KvCache& kv) const {
    using namespace ops;
    const int64_t T = int64_t(ub.tokens.size());
    const float eps = hp_.rms_eps;
    Tensor* tokens = g.input(DType::I32, {T}, ub.tokens.data(), "tokens");
    Tensor* pos = g.input(DType::I32, {T}, ub.pos.data(), "pos");
    Tensor* seq = g.input(DType::I32, {T}, ub.seq.data(), "seq");
    CacheRows cache_rows(g, ub);
    Tensor* rope_cs = RopeTables(g, ub.pos)(rope_);

    Tensor* x = get_rows(g, tok_embd_, tokens);  // (E, T)
    for (int64_t il = 0; il < hp_.n_layer; ++il) {
        const Layer& w = layers_[size_t(il)];
        const LayerParams& L = hp_.layers[size_t(il)];
        const int64_t hd = L.head_dim_k;
        Tensor* h = rms_norm(g, x, w.attn_norm, eps);
        Tensor* q = reshape(g, add(g, mul_mat(g, w.at.wq, h), w.at.bq), {hd, L.n_head, T});
        Tensor* k = reshape(g, add(g, mul_mat(g, w.at.wk, h), w.at.bk), {hd, L.n_head_kv, T});
        Tensor* v = add(g, mul_mat(g, w.at.wv, h), w.at.bv);  // (n_head_kv * hd, T)
        q = rope(g, q, rope_cs, rope_);
        k = rope(g, k, rope_cs, rope_);
        Tensor* a = cached_attention(g, kv, cache_rows, int(il), q, k, v, pos, seq, L.n_head_kv, hp_.attn_scale,
                                     {.window = L.window, .sinks = w.sinks});  // (hd, n_head, T)
        x = add(g, x, add(g, mul_mat(g, w.at.wo, reshape(g, a, {hd * L.n_head, T})), w.at.bo));

        // Router: the k largest logits, then a softmax over those k alone.
        h = rms_norm(g, x, w.post_attn_norm, eps);
        Tensor* logits = add(g, mul_mat(g, w.ffn_gate_inp, h), w.ffn_gate_inp_b);  // [n_expert, T]
        Tensor* ids = topk_ids(g, logits, int(n_expert_used_));                     // [k, T]
        Tensor* wts = softmax(g, topk_weights(g, logits, int(n_expert_used_), false), 1.0f);
        x = add(g, x, moe_experts(g, w.experts, h, ids, wts));
    }
    return output_head(g, ub, x);
}

}  // namespace ls
