#include "core/models/gemma.h"

#include <cfloat>
#include <cmath>
#include <stdexcept>

#include "core/models/arch_keys.h"
#include "core/ir/ops.h"
#include "core/models/attention_block.h"
#include "core/models/ffn_block.h"
#include "core/rules/attention_rule.h"

namespace ls {

void Gemma::load_arch() {
    const GgufFile& f = *file_;
    const std::string arch = f.get_string("general.architecture");
    const bool g2 = arch == "gemma2";
    // EmbeddingGemma: Gemma 3 layers attending both ways, no output projection (its states,
    // after the final norm, are pooled as <arch>.pooling_type says).
    const bool embedding = arch == "gemma-embedding";
    const std::string a = arch + ".";
    const ArchKeys keys(f, arch);
    auto bad = [&](const std::string& what) { throw std::runtime_error(arch + ": " + what); };
    hp_.arch = arch;
    read_decoder_sizes(keys, 1e-6);
    hp_.n_ff = keys.get_int(ArchKey::FeedForwardLength);
    const int64_t n_head = keys.get_int(ArchKey::HeadCount);
    const int64_t n_head_kv = keys.get_int(ArchKey::HeadCountKv, n_head);
    const int64_t hd_k = keys.get_int(ArchKey::KeyLength, n_head > 0 ? hp_.n_embd / n_head : 0);
    const int64_t hd_v = keys.get_int(ArchKey::ValueLength, hd_k);
    // Gemma 2's published window when the file does not say (llama.cpp's default too).
    const int64_t window = g2 ? keys.get_int(ArchKey::SlidingWindow, 4096) : keys.get_int(ArchKey::SlidingWindow, 0);
    // Of every `period` layers all but the last slide.
    const int64_t period = g2 ? keys.get_int(ArchKey::SlidingWindowPattern, 2) : 6;
    const float base_global = float(keys.get_float(ArchKey::RopeFreqBase, g2 ? 10000.0 : 1e6));
    float scale_global = 1.f;
    if (!g2 && keys.get_string(ArchKey::RopeScalingType, "none") == "linear")
        scale_global = float(1.0 / keys.get_float(ArchKey::RopeScalingFactor, 1.0));
    if (g2) {
        attn_softcap_ = float(keys.get_float(ArchKey::AttnLogitSoftcapping, 50.0));
        final_softcap_ = float(keys.get_float(ArchKey::FinalLogitSoftcapping, 30.0));
    }
    constexpr int64_t kMax = int64_t(1) << 30;
    for (int64_t v : {hp_.n_embd, hp_.n_ff, n_head, n_head_kv, hd_k, hd_v, window, period})
        if (v > kMax) bad("a hyperparameter of " + std::to_string(v) + " is out of range (broken metadata)");
    if (hp_.n_embd <= 0 || hp_.n_layer <= 0 || hp_.n_layer > 4096 || hp_.n_ff <= 0 || n_head <= 0 || n_head_kv <= 0 ||
        n_head % n_head_kv || hd_k <= 0 || hd_k % 2 || hd_v <= 0 || window < 0 || (g2 && window == 0) || period < 1)
        bad("inconsistent hyperparameters in the GGUF metadata");
    for (float c : {attn_softcap_, final_softcap_})
        if (!std::isfinite(c) || (c != 0.f && !(c >= FLT_MIN))) bad("soft-caps must be positive or 0 (off)");
    if (!(base_global > 1.0f) || !std::isfinite(base_global) || !(scale_global > 0) || !std::isfinite(scale_global))
        bad("rope.freq_base must be a finite number above 1 and the scaling factor positive");
    if (hp_.n_ctx_train > 0 && window > hp_.n_ctx_train)
        bad("sliding window of " + std::to_string(window) + " tokens is larger than the model's context of " +
            std::to_string(hp_.n_ctx_train) + " (broken metadata)");
    // Queries are scaled by query_pre_attn_scalar^-1/2, which the converter does not write:
    // the head size, except in the 27B models (Gemma 2: 46 layers, Gemma 3: 62), where it is
    // n_embd / n_head. A file that carries attention.scale is taken at its word.
    const bool is_27b = hp_.n_layer == (g2 ? 46 : 62);
    const double scale = keys.get_float(ArchKey::AttentionScale, 0.0);
    hp_.attn_scale = scale != 0.0 ? float(scale)
                     : is_27b     ? 1.0f / std::sqrt(float(hp_.n_embd / n_head))
                                  : 1.0f / std::sqrt(float(hd_k));
    if (!std::isfinite(hp_.attn_scale) || hp_.attn_scale <= 0) bad("attention.scale must be a positive number");
    if (embedding) {
        hp_.causal = false;
        hp_.has_logits = false;
        // Its local layers' window is symmetric (llama.cpp's LLAMA_SWA_TYPE_SYMMETRIC: keys with
        // |k - p| <= W / 2), given to attention as each query's first and last key
        // (kAttnFirstGiven); their cache is not a ring (LayerParams::window 0), the input whole.
        bidir_reach_ = int32_t(window / 2);
        if (window <= 0) bad("attention.sliding_window is missing or 0");
    }
    for (int64_t il = 0; il < hp_.n_layer; ++il) {
        const bool local = il % period < period - 1;
        // Gemma 3's local layers use base 10000 and ignore rope scaling.
        const bool g3_local = local && !g2;
        hp_.layers.push_back({.window = local && !embedding ? int32_t(window) : 0, .rope_base = g3_local ? 10000.f : base_global,
                              .rope_scale = g3_local ? 1.f : scale_global, .n_head = int32_t(n_head),
                              .n_head_kv = int32_t(n_head_kv), .head_dim_k = int32_t(hd_k), .head_dim_v = int32_t(hd_v)});
    }

    const int64_t E = hp_.n_embd, F = hp_.n_ff;
    bind_embeddings();
    for (int64_t il = 0; il < hp_.n_layer; ++il) {
        const std::string p = "blk." + std::to_string(il) + ".";
        Layer l{};
        l.symmetric = embedding && il % period < period - 1;
        l.attn_norm = norm_weight(p + "attn_norm.weight", E);
        l.at = attn_weights(p, hp_.layers[size_t(il)], Biases::None);
        if (!g2) {
            l.q_norm = norm_weight(p + "attn_q_norm.weight", hd_k);
            l.k_norm = norm_weight(p + "attn_k_norm.weight", hd_k);
        }
        l.post_attn_norm = norm_weight(p + "post_attention_norm.weight", E);
        l.ffn_norm = norm_weight(p + "ffn_norm.weight", E);
        l.ffn_gate = matmul_weight(p + "ffn_gate.weight", E, F);
        l.ffn_up = matmul_weight(p + "ffn_up.weight", E, F);
        l.ffn_down = matmul_weight(p + "ffn_down.weight", F, E);
        l.post_ffw_norm = norm_weight(p + "post_ffw_norm.weight", E);
        layers_.push_back(l);
    }
    if (embedding) load_dense_projection();
}

// The sentence-transformers Dense modules (convert_hf_to_gguf.py
// --sentence-transformers-dense-modules): dense_2 (n_embd -> dense_2_feat_out), then dense_3
// (dense_3_feat_in -> n_embd), each optional, applied to the pooled embedding before it is
// normalized (llama.cpp's build_dense_out; EmbedRun applies embd_projection()). The widths
// come from the keys, as llama.cpp reads them (it checks dense_2_feat_in and dense_3_feat_out
// against n_embd when present; a tensor without its width key fails its shape check there); a
// chain that does not compose, or does not end at n_embd, is refused here, where llama.cpp
// would fail an assertion while computing or read the wrong values.
void Gemma::load_dense_projection() {
    const GgufFile& f = *file_;
    const std::string a = hp_.arch + ".";
    const ArchKeys keys(f, hp_.arch);
    const int64_t E = hp_.n_embd;
    auto bad = [&](const std::string& what) { throw std::runtime_error(hp_.arch + ": " + what); };
    auto key = [&](ArchKey k) {
        const int64_t v = keys.get_int(k, 0);
        if (v < 0 || v > (int64_t(1) << 30)) bad(keys.name(k) + " is " + std::to_string(v) + ", out of range (broken metadata)");
        return v;
    };
    const int64_t in2 = key(ArchKey::Dense2FeatIn), out2 = key(ArchKey::Dense2FeatOut), in3 = key(ArchKey::Dense3FeatIn),
                  out3 = key(ArchKey::Dense3FeatOut);
    if (in2 != 0 && in2 != E) bad(a + "dense_2_feat_in is " + std::to_string(in2) + ", not embedding_length " + std::to_string(E));
    if (out3 != 0 && out3 != E) bad(a + "dense_3_feat_out is " + std::to_string(out3) + ", not embedding_length " + std::to_string(E));
    // llama.cpp's gemma-embedding takes no bias (its loader would count the tensor as unused and
    // refuse the file; the converter writes none): refused rather than silently left out.
    for (const char* b : {"dense_2.bias", "dense_3.bias"})
        if (f.find_tensor(b)) bad(std::string("tensor '") + b + "': a bias on the dense projections is not part of gemma-embedding");
    int64_t n = E;  // the width of the vector so far
    if (f.find_tensor("dense_2.weight")) {
        if (out2 == 0) bad("the file has tensor 'dense_2.weight' but no " + a + "dense_2_feat_out (its output width)");
        embd_proj_.push_back(host_linear("dense_2.weight", E, out2));  // (n_embd, dense_2_feat_out)
        n = out2;
    }
    if (f.find_tensor("dense_3.weight")) {
        if (in3 == 0) bad("the file has tensor 'dense_3.weight' but no " + a + "dense_3_feat_in (its input width)");
        if (in3 != n)
            bad(a + "dense_3_feat_in is " + std::to_string(in3) + ", but " + (n == E ? "the pooled embedding" : "dense_2's output") +
                " has " + std::to_string(n) + " values");
        embd_proj_.push_back(host_linear("dense_3.weight", in3, E));  // (dense_3_feat_in, n_embd)
        n = E;
    }
    if (n != E)
        bad("tensor 'dense_2.weight' maps the embedding to " + std::to_string(n) + " values and no dense_3.weight maps them back to " +
            "embedding_length " + std::to_string(E));
}

Tensor* Gemma::build_graph(Graph& g, const Ubatch& ub, KvCache& kv) const {
    using namespace ops;
    const int64_t T = int64_t(ub.tokens.size()), E = hp_.n_embd;
    const float eps = hp_.rms_eps;
    Tensor* tokens = g.input(DType::I32, {T}, ub.tokens.data(), "tokens");
    Tensor* pos = attn_positions(g, ub, hp_.causal);  // each query's last visible key
    Tensor* sym_keys = nullptr;  // EmbeddingGemma's local layers: each query's last and first key
    if (bidir_reach_ > 0) {
        std::vector<int32_t> keys(size_t(2 * T));
        attn_symmetric_keys(ub.pos.data(), ub.seq.data(), T, bidir_reach_, keys.data());
        sym_keys = g.input(DType::I32, {T, 2}, keys.data(), "attn_symmetric_keys");  // (copied now)
    }
    Tensor* seq = g.input(DType::I32, {T}, ub.seq.data(), "seq");
    CacheRows cache_rows(g, ub);
    RopeTables rope_tables(g, ub.pos);

    // Token rows scaled by sqrt(n_embd); given rows (an image's) are not (HF and llama.cpp alike).
    Tensor* x = with_given_rows(g, ub, scale(g, get_rows(g, tok_embd_, tokens), std::sqrt(float(E))));  // (E, T)
    AttnKeys attn_keys(g, ub, pos);
    for (int64_t il = 0; il < hp_.n_layer; ++il) {
        const Layer& w = layers_[size_t(il)];
        const LayerParams& L = hp_.layers[size_t(il)];
        Tensor* h = rms_norm(g, x, w.attn_norm, eps);
        Tensor* q = reshape(g, mul_mat(g, w.at.wq, h), {L.head_dim_k, L.n_head, T});
        Tensor* k = reshape(g, mul_mat(g, w.at.wk, h), {L.head_dim_k, L.n_head_kv, T});
        Tensor* v = mul_mat(g, w.at.wv, h);  // (n_head_kv * head_dim_v, T)
        if (w.q_norm) {
            q = rms_norm(g, q, w.q_norm, eps);
            k = rms_norm(g, k, w.k_norm, eps);
        }
        const RopeParams rp{L.head_dim_k, ROPE_NEOX, L.rope_base, L.rope_scale};
        q = rope(g, q, rope_tables(rp), rp);
        k = rope(g, k, rope_tables(rp), rp);
        const AttnKeys::Keys bk = attn_keys(L.window);  // (an image block's tokens see the whole block)
        const CachedAttention ca{.window = w.symmetric ? kAttnFirstGiven : bk.window, .softcap = attn_softcap_};
        Tensor* a = cached_attention(g, kv, cache_rows, int(il), q, k, v, w.symmetric ? sym_keys : bk.pos, seq, L.n_head_kv,
                                     hp_.attn_scale, ca);  // (head_dim_v, n_head, T)
        Tensor* o = mul_mat(g, w.at.wo, reshape(g, a, {int64_t(L.head_dim_v) * L.n_head, T}));
        x = add(g, x, rms_norm(g, o, w.post_attn_norm, eps));

        h = rms_norm(g, x, w.ffn_norm, eps);
        x = add(g, x, rms_norm(g, gated_ffn(g, h, w.ffn_gate, w.ffn_up, w.ffn_down, GatedAct::Gelu), w.post_ffw_norm, eps));
    }
    return output_head(g, ub, x, final_softcap_);
}

}  // namespace ls
