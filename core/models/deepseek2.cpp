#include "core/models/deepseek2.h"

#include <cmath>
#include <stdexcept>

#include "core/ir/ops.h"
#include "core/models/arch_keys.h"
#include "core/models/attention_block.h"
#include "core/models/ffn_block.h"
#include "core/models/rope_scaling.h"

namespace ls {

void Deepseek2::load_arch() {
    const GgufFile& f = *file_;
    const std::string arch = f.get_string("general.architecture");
    const ArchKeys keys(f, arch);
    auto bad = [&](const std::string& what) { throw std::runtime_error(arch + ": " + what); };
    hp_.arch = arch;
    read_decoder_sizes(keys, 1e-6);
    // An appended NextN layer (GLM 4.7 Lite, DeepSeek V3's MTP) is counted in block_count.
    const int64_t nextn = keys.get_int(ArchKey::NextnPredictLayers, 0);
    if (nextn < 0 || nextn >= hp_.n_layer) bad("nextn_predict_layers " + std::to_string(nextn) + " leaves no layer (broken metadata)");
    hp_.n_layer -= nextn;
    n_head_ = keys.get_int(ArchKey::HeadCount);
    kv_rank_ = keys.get_int(ArchKey::KvLoraRank);
    const int64_t q_rank = keys.get_int(ArchKey::QLoraRank, 0);
    n_rot_ = keys.get_int(ArchKey::RopeDimensionCount);
    if (!keys.has(ArchKey::KeyLengthMla) || !f.find_tensor("blk.0.attn_k_b.weight"))
        bad("this file has the unsplit attn_kv_b of converters before April 2025 (no key_length_mla / attn_k_b); "
            "convert the model again with a current convert_hf_to_gguf.py");
    const int64_t hd_k = keys.get_int(ArchKey::KeyLengthMla);
    hd_v_ = keys.get_int(ArchKey::ValueLengthMla);
    nope_ = hd_k - n_rot_;
    const int64_t n_expert = keys.get_int(ArchKey::ExpertCount, 0);
    const int64_t n_dense = keys.get_int(ArchKey::LeadingDenseBlockCount, 0);
    const int64_t n_shared = keys.get_int(ArchKey::ExpertSharedCount, 0);
    hp_.n_ff = keys.get_int(ArchKey::FeedForwardLength);
    const int64_t F_exp = n_expert > 0 ? keys.get_int(ArchKey::ExpertFeedForwardLength) : 0;
    constexpr int64_t kMax = int64_t(1) << 30;
    for (int64_t v : {n_head_, kv_rank_, q_rank, n_rot_, hd_k, hd_v_, n_expert, n_dense, n_shared, hp_.n_ff, F_exp})
        if (v < 0 || v > kMax) bad("a hyperparameter of " + std::to_string(v) + " is out of range (broken metadata)");
    if (hp_.n_embd <= 0 || n_head_ <= 0 || kv_rank_ <= 0 || n_rot_ <= 0 || n_rot_ % 2 || nope_ <= 0 || hd_v_ <= 0 || hp_.n_ff <= 0)
        bad("inconsistent head / latent / rope sizes in the GGUF metadata");
    if (keys.get_int(ArchKey::HeadCountKv, 1) != 1)
        bad("attention.head_count_kv must be 1 for multi-head latent attention (the converter writes 1)");
    if (n_dense < hp_.n_layer && (n_expert < 1 || F_exp <= 0)) bad("routed layers need expert_count and expert_feed_forward_length");
    if (n_expert > 0) router_ = read_moe_router(keys, n_expert, false);

    // YaRN: the angles as the file's rope.scaling keys say, cos and sin unscaled (DeepSeek's
    // mscale equals its mscale_all_dim, so transformers' attention_factor is 1), and the
    // scores scaled by mscale^2 with mscale = 1 + 0.1 mscale_all_dim ln(factor). The converter
    // writes yarn_log_multiplier as 0.1 * mscale_all_dim for this architecture.
    const float base = float(keys.get_float(ArchKey::RopeFreqBase, 10000.0));
    if (!(base > 1.0f) || !std::isfinite(base)) bad("rope.freq_base must be a finite number above 1");
    rope_ = rope_params_from_gguf(keys, int32_t(n_rot_), ROPE_NORMAL, base);
    double mscale = 1.0;
    if (rope_.ext_factor != 0.f || keys.get_string(ArchKey::RopeScalingType, "none") == "yarn") {
        rope_.attn_factor = float(keys.get_float(ArchKey::RopeScalingAttnFactor, 1.0));
        const double factor = 1.0 / double(rope_.freq_scale);
        const double log_mul = keys.get_float(ArchKey::RopeYarnLogMul, 0.0);
        if (factor > 1.0) mscale = 1.0 + log_mul * std::log(factor);
    }
    hp_.attn_scale = float(mscale * mscale / std::sqrt(double(hd_k)));
    for (int64_t il = 0; il < hp_.n_layer; ++il)
        hp_.layers.push_back({.rope_base = base, .rope_scale = rope_.freq_scale, .n_head = int32_t(n_head_), .n_head_kv = 1,
                              .head_dim_k = int32_t(kv_rank_ + n_rot_), .head_dim_v = int32_t(kv_rank_), .v_in_k = true});

    const int64_t E = hp_.n_embd, H = n_head_;
    bind_embeddings();
    for (int64_t il = 0; il < hp_.n_layer; ++il) {
        const std::string p = "blk." + std::to_string(il) + ".";
        Layer l{};
        l.attn_norm = norm_weight(p + "attn_norm.weight", E);
        if (q_rank > 0) {
            l.wq_a = matmul_weight(p + "attn_q_a.weight", E, q_rank);
            l.q_a_norm = norm_weight(p + "attn_q_a_norm.weight", q_rank);
            l.wq_b = matmul_weight(p + "attn_q_b.weight", q_rank, H * hd_k);
        } else {
            l.wq = matmul_weight(p + "attn_q.weight", E, H * hd_k);
        }
        l.wkv_a = matmul_weight(p + "attn_kv_a_mqa.weight", E, kv_rank_ + n_rot_);
        l.kv_a_norm = norm_weight(p + "attn_kv_a_norm.weight", kv_rank_);
        l.wk_b = expert_weight(p + "attn_k_b.weight", nope_, kv_rank_, H);
        l.wv_b = expert_weight(p + "attn_v_b.weight", kv_rank_, hd_v_, H);
        l.wo = matmul_weight(p + "attn_output.weight", H * hd_v_, E);
        l.ffn_norm = norm_weight(p + "ffn_norm.weight", E);
        if (il < n_dense) {
            l.ffn_gate = matmul_weight(p + "ffn_gate.weight", E, hp_.n_ff);
            l.ffn_up = matmul_weight(p + "ffn_up.weight", E, hp_.n_ff);
            l.ffn_down = matmul_weight(p + "ffn_down.weight", hp_.n_ff, E);
        } else {
            l.gate_inp = matmul_weight(p + "ffn_gate_inp.weight", E, n_expert);
            l.probs_b = weight(p + "exp_probs_b.bias", {n_expert}, false);
            l.experts.gate = expert_weight(p + "ffn_gate_exps.weight", E, F_exp, n_expert);
            l.experts.up = expert_weight(p + "ffn_up_exps.weight", E, F_exp, n_expert);
            l.experts.down = expert_weight(p + "ffn_down_exps.weight", F_exp, E, n_expert);
            l.experts.n_ff = F_exp;
            l.experts.act = MoeAct::Silu;
            if (n_shared > 0) {
                l.sh_gate = matmul_weight(p + "ffn_gate_shexp.weight", E, F_exp * n_shared);
                l.sh_up = matmul_weight(p + "ffn_up_shexp.weight", E, F_exp * n_shared);
                l.sh_down = matmul_weight(p + "ffn_down_shexp.weight", F_exp * n_shared, E);
            }
        }
        layers_.push_back(l);
    }
}

Tensor* Deepseek2::build_graph(Graph& g, const Ubatch& ub, KvCache& kv) const {
    using namespace ops;
    const int64_t T = int64_t(ub.tokens.size()), H = n_head_, Dk = nope_ + n_rot_, L = kv_rank_;
    const float eps = hp_.rms_eps;
    Tensor* tokens = g.input(DType::I32, {T}, ub.tokens.data(), "tokens");
    Tensor* pos = g.input(DType::I32, {T}, ub.pos.data(), "pos");
    Tensor* seq = g.input(DType::I32, {T}, ub.seq.data(), "seq");
    CacheRows cache_rows(g, ub);
    Tensor* rope_cs = RopeTables(g, ub.pos)(rope_);
    // Head j's query row goes through head j's matrix of attn_k_b / attn_v_b: mul_mat_id with
    // the head as the expert (ids[j, t] = j).
    std::vector<int32_t> heads(size_t(H * T));
    for (int64_t i = 0; i < H * T; ++i) heads[size_t(i)] = int32_t(i % H);
    Tensor* head_ids = g.input(DType::I32, {H, T}, heads.data(), "mla_heads");

    Tensor* x = get_rows(g, tok_embd_, tokens);  // (E, T)
    for (int64_t il = 0; il < hp_.n_layer; ++il) {
        const Layer& w = layers_[size_t(il)];
        Tensor* h = rms_norm(g, x, w.attn_norm, eps);
        Tensor* q = w.wq ? mul_mat(g, w.wq, h) : mul_mat(g, w.wq_b, rms_norm(g, mul_mat(g, w.wq_a, h), w.q_a_norm, eps));
        Tensor* qh = reshape(g, q, {Dk, H * T});  // a head's no-rope part, then its rope part
        Tensor* q_nope = reshape(g, cont(g, view_2d(g, qh, nope_, H * T, size_t(Dk) * 4, 0)), {nope_, H, T});
        Tensor* q_pe = reshape(g, cont(g, view_2d(g, qh, n_rot_, H * T, size_t(Dk) * 4, size_t(nope_) * 4)), {n_rot_, H, T});
        q_pe = rope(g, q_pe, rope_cs, rope_);
        Tensor* kv_pe = mul_mat(g, w.wkv_a, h);  // (L + n_rot, T): the latent, then the shared rope part
        Tensor* latent = rms_norm(g, cont(g, view_2d(g, kv_pe, L, T, size_t(L + n_rot_) * 4, 0)), w.kv_a_norm, eps);
        Tensor* k_pe = reshape(g, cont(g, view_2d(g, kv_pe, n_rot_, T, size_t(L + n_rot_) * 4, size_t(L) * 4)), {n_rot_, 1, T});
        k_pe = rope(g, k_pe, rope_cs, rope_);
        Tensor* q_lat = mul_mat_id(g, w.wk_b, q_nope, head_ids);  // (L, H, T)
        Tensor* qk = concat(g, q_lat, q_pe);                       // (L + n_rot, H, T)
        Tensor* kk = concat(g, latent, reshape(g, k_pe, {n_rot_, T}));  // (L + n_rot, T)
        Tensor* a = cached_attention(g, kv, cache_rows, int(il), qk, kk, latent, pos, seq, 1, hp_.attn_scale);  // (L, H, T)
        Tensor* o = mul_mat_id(g, w.wv_b, a, head_ids);  // (Dv, H, T)
        x = add(g, x, mul_mat(g, w.wo, reshape(g, o, {hd_v_ * H, T})));
        Tensor* hf = rms_norm(g, x, w.ffn_norm, eps);
        Tensor* f;
        if (w.ffn_gate) {
            f = gated_ffn(g, hf, w.ffn_gate, w.ffn_up, w.ffn_down, GatedAct::Silu);
        } else {
            const MoeRoute r = route_experts(g, router_, w.gate_inp, w.probs_b, hf);
            f = moe_experts(g, w.experts, hf, r.ids, r.wts);
            if (w.sh_gate) f = add(g, f, gated_ffn(g, hf, w.sh_gate, w.sh_up, w.sh_down, GatedAct::Silu));
        }
        x = add(g, x, f);
    }
    return output_head(g, ub, x);
}

}  // namespace ls
