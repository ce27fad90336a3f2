#include "core/models/qwen3next.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "core/models/arch_keys.h"
#include "core/models/moe.h"
#include "core/models/rope_scaling.h"
#include "core/ir/ops.h"
#include "core/models/attention_block.h"
#include "core/models/ffn_block.h"
#include "core/models/scan_inputs.h"
#include "core/rules/rope_rule.h"
#include "core/rules/topk_rule.h"

namespace ls {

void Qwen3Hybrid::load_arch() {
    const GgufFile& f = *file_;
    hp_.arch = f.get_string("general.architecture");
    if (hp_.arch != "qwen35" && hp_.arch != "qwen35moe" && hp_.arch != "qwen3next")
        throw std::runtime_error("qwen3 hybrid loader: architecture '" + hp_.arch + "' (expected qwen35, qwen35moe or qwen3next)");
    const std::string a = hp_.arch + ".";
    const ArchKeys keys(f, hp_.arch);
    read_decoder_sizes(keys, 1e-6);
    hp_.n_ff = keys.get_int(ArchKey::FeedForwardLength, 0);  // dense FFN layers only
    n_expert_ = keys.get_int(ArchKey::ExpertCount, 0);
    n_expert_used_ = keys.get_int(ArchKey::ExpertUsedCount, 0);
    n_ff_exp_ = keys.get_int(ArchKey::ExpertFeedForwardLength, 0);
    n_ff_shexp_ = keys.get_int(ArchKey::ExpertSharedFeedForwardLength, 0);
    expert_norm_ = keys.get_bool(ArchKey::ExpertWeightsNorm, true);
    const int64_t n_head = keys.get_int(ArchKey::HeadCount);
    const int64_t n_head_kv = keys.get_int(ArchKey::HeadCountKv, n_head);
    const int64_t hd = keys.get_int(ArchKey::KeyLength, hp_.n_embd / n_head);
    if (keys.get_int(ArchKey::ValueLength, hd) != hd)
        throw std::runtime_error("qwen3 hybrid: attention key and value head sizes differ (unsupported)");
    n_rot_ = keys.get_int(ArchKey::RopeDimensionCount, hd);
    const double rope_base = keys.get_float(ArchKey::RopeFreqBase, 1e7);
    const int64_t interval = keys.get_int(ArchKey::FullAttentionInterval, 4);
    d_conv_ = keys.get_int(ArchKey::SsmConvKernel);
    d_k_ = keys.get_int(ArchKey::SsmStateSize);
    n_k_heads_ = keys.get_int(ArchKey::SsmGroupCount);
    n_v_heads_ = keys.get_int(ArchKey::SsmTimeStepRank);
    const int64_t inner = keys.get_int(ArchKey::SsmInnerSize);
    d_v_ = n_v_heads_ > 0 ? inner / n_v_heads_ : 0;
    if (n_expert_ > 0 && (n_expert_used_ < 1 || n_expert_used_ > n_expert_ || n_expert_used_ > kTopkMax || n_ff_exp_ <= 0 ||
                          n_ff_shexp_ < 0))
        throw std::runtime_error(hp_.arch + ": inconsistent expert metadata (expert_count " + std::to_string(n_expert_) +
                                 ", expert_used_count " + std::to_string(n_expert_used_) + ", expert_feed_forward_length " +
                                 std::to_string(n_ff_exp_) + ")");
    if (hp_.n_embd <= 0 || hp_.n_layer <= 0 || (hp_.n_ff <= 0 && n_expert_ <= 0) || n_head <= 0 || n_head_kv <= 0 || n_head % n_head_kv ||
        hd <= 0 || n_rot_ <= 0 || n_rot_ % 2 || n_rot_ > hd || interval <= 0 || d_conv_ < 2 || d_conv_ > 16 || d_k_ <= 0 ||
        n_k_heads_ <= 0 || n_v_heads_ <= 0 || n_v_heads_ % n_k_heads_ || d_v_ <= 0 || d_v_ * n_v_heads_ != inner)
        throw std::runtime_error("qwen3 hybrid: inconsistent hyperparameters in the GGUF metadata");
    // Qwen3.5's interleaved M-RoPE (rope.dimension_sections: pairs of time, height, width):
    // every axis holds the same position for text, which makes it plain NEOX rope over the
    // first n_rot dims; an image's tokens take their grid places (Session::rope_positions).
    if (std::vector<int32_t> axes = mrope_axes_from_gguf(f, hp_.arch, n_rot_);
        std::any_of(axes.begin(), axes.end(), [](int32_t ax) { return ax != 0; }))
        mrope_axes_ = std::move(axes);
    hp_.attn_scale = 1.0f / std::sqrt(float(hd));
    for (int64_t il = 0; il < hp_.n_layer; ++il) {
        LayerParams L;
        L.recurrent = (il + 1) % interval != 0;
        L.rope_base = float(rope_base);
        L.n_head = int32_t(n_head);
        L.n_head_kv = int32_t(n_head_kv);
        L.head_dim_k = L.head_dim_v = int32_t(hd);
        hp_.layers.push_back(L);
    }

    const int64_t E = hp_.n_embd, C = 2 * n_k_heads_ * d_k_ + n_v_heads_ * d_v_, V = n_v_heads_ * d_v_;
    bind_embeddings();
    for (int64_t il = 0; il < hp_.n_layer; ++il) {
        const std::string p = "blk." + std::to_string(il) + ".";
        Layer l{};
        l.attn_norm = norm_weight(p + "attn_norm.weight", E);
        l.post_attn_norm = norm_weight(p + "post_attention_norm.weight", E);
        if (hp_.layers[size_t(il)].recurrent) {
            l.wqkv = matmul_weight(p + "attn_qkv.weight", E, C);
            l.wgate = matmul_weight(p + "attn_gate.weight", E, V);
            l.conv1d = weight(p + "ssm_conv1d.weight", {d_conv_, C});
            switch (l.conv1d->type) {  // f32 is used as it is; others are dequantized per graph (small)
                case DType::F32: case DType::F16: case DType::BF16: case DType::Q8_0: break;
                default:
                    throw std::runtime_error("tensor '" + p + "ssm_conv1d.weight' has type " + dtype_name(l.conv1d->type) +
                                             " (use f32, f16, bf16 or q8_0)");
            }
            if (l.conv1d->type == DType::Q8_0 && d_conv_ % 32 != 0)
                throw std::runtime_error("tensor '" + p + "ssm_conv1d.weight': q8_0 rows of " + std::to_string(d_conv_) +
                                         " values cannot hold whole blocks");
            l.dt_bias = norm_weight(p + "ssm_dt.bias", n_v_heads_);
            l.ssm_a = norm_weight(p + "ssm_a", n_v_heads_);
            if (head_map_ == HEADS_GROUPED) {
                l.ssm_ba = matmul_weight(p + "ssm_ba.weight", E, 2 * n_v_heads_);
            } else {
                l.ssm_beta = matmul_weight(p + "ssm_beta.weight", E, n_v_heads_);
                l.ssm_alpha = matmul_weight(p + "ssm_alpha.weight", E, n_v_heads_);
            }
            l.ssm_norm = norm_weight(p + "ssm_norm.weight", d_v_);
            l.ssm_out = matmul_weight(p + "ssm_out.weight", V, E);
        } else {
            l.wq = matmul_weight(p + "attn_q.weight", E, n_head * hd * 2);
            l.wk = matmul_weight(p + "attn_k.weight", E, n_head_kv * hd);
            l.wv = matmul_weight(p + "attn_v.weight", E, n_head_kv * hd);
            l.q_norm = norm_weight(p + "attn_q_norm.weight", hd);
            l.k_norm = norm_weight(p + "attn_k_norm.weight", hd);
            l.wo = matmul_weight(p + "attn_output.weight", n_head * hd, E);
        }
        if (f.find_tensor(p + "ffn_gate_inp.weight")) {
            if (n_expert_ <= 0)
                throw std::runtime_error(hp_.arch + ": layer " + std::to_string(il) +
                                         " has a router (ffn_gate_inp) but the metadata has no expert_count");
            const int64_t NE = n_expert_, F = n_ff_exp_;
            l.ffn_gate_inp = matmul_weight(p + "ffn_gate_inp.weight", E, NE);
            if (f.find_tensor(p + "ffn_gate_up_exps.weight")) {
                l.ffn_gate_up_exps = expert_weight(p + "ffn_gate_up_exps.weight", E, 2 * F, NE);
            } else {
                l.ffn_gate_exps = expert_weight(p + "ffn_gate_exps.weight", E, F, NE);
                l.ffn_up_exps = expert_weight(p + "ffn_up_exps.weight", E, F, NE);
            }
            l.ffn_down_exps = expert_weight(p + "ffn_down_exps.weight", F, E, NE);
            if (f.find_tensor(p + "ffn_gate_inp_shexp.weight")) {
                if (n_ff_shexp_ <= 0)
                    throw std::runtime_error(hp_.arch + ": a shared expert without expert_shared_feed_forward_length");
                l.ffn_gate_inp_shexp = matmul_weight(p + "ffn_gate_inp_shexp.weight", E, 1);
                l.ffn_gate_shexp = matmul_weight(p + "ffn_gate_shexp.weight", E, n_ff_shexp_);
                l.ffn_up_shexp = matmul_weight(p + "ffn_up_shexp.weight", E, n_ff_shexp_);
                l.ffn_down_shexp = matmul_weight(p + "ffn_down_shexp.weight", n_ff_shexp_, E);
            }
        } else {
            if (hp_.n_ff <= 0) throw std::runtime_error(hp_.arch + ": a dense FFN layer but no feed_forward_length");
            l.ffn_gate = matmul_weight(p + "ffn_gate.weight", E, hp_.n_ff);
            l.ffn_up = matmul_weight(p + "ffn_up.weight", E, hp_.n_ff);
            l.ffn_down = matmul_weight(p + "ffn_down.weight", hp_.n_ff, E);
        }
        layers_.push_back(l);
    }
}

std::vector<RecurrentLayerSpec> Qwen3Hybrid::recurrent_layout() const {
    const int64_t C = 2 * n_k_heads_ * d_k_ + n_v_heads_ * d_v_;
    std::vector<RecurrentLayerSpec> v;
    for (const LayerParams& L : hp_.layers)
        v.push_back(L.recurrent ? RecurrentLayerSpec{(d_conv_ - 1) * C, n_v_heads_ * d_v_ * d_k_} : RecurrentLayerSpec{});
    return v;
}

Tensor* Qwen3Hybrid::build_graph(Graph& g, const Ubatch& ub, KvCache& kv, RecurrentMemory* rs) const {
    using namespace ops;
    if (!rs) throw std::logic_error("qwen3 hybrid: recurrent memory is required");
    const int64_t T = int64_t(ub.tokens.size());
    const float eps = hp_.rms_eps;
    Tensor* tokens = g.input(DType::I32, {T}, ub.tokens.data(), "tokens");
    Tensor* pos = g.input(DType::I32, {T}, ub.pos.data(), "pos");
    Tensor* seq = g.input(DType::I32, {T}, ub.seq.data(), "seq");

    const auto [runs_t, order_t] = scan_inputs(g, ub);

    CacheRows cache_rows(g, ub);  // full-attention layers: R = n_ctx
    RopeTables rope_tables(g, ub.pos);
    Tensor* mrope_cs = nullptr;  // M-RoPE: one table (every full-attention layer has the same base)
    // A ubatch without M-RoPE positions (built by hand, not by a Session) is text: every axis
    // at its position, plain rope. Image rows need the positions.
    const bool mrope = !mrope_axes_.empty() && !ub.rope_pos.empty();
    if (mrope && int64_t(ub.rope_pos.size()) != 3 * T) throw std::logic_error("qwen35: M-RoPE positions of the wrong size");
    if (!mrope && !mrope_axes_.empty() && !ub.embd_at.empty())
        throw std::logic_error("qwen35: image rows without M-RoPE positions (Session::rope_positions)");
    // Query and gate rows of the joint projection: per head [q (hd), gate (hd)].
    Tensor* q_idx = nullptr;
    Tensor* gate_idx = nullptr;
    Tensor* conv_rows = nullptr;  // all rows of a non-f32 conv kernel
    Tensor* b_idx = nullptr;  // qwen3next: beta and alpha entries of ssm_ba's output
    Tensor* a_idx = nullptr;

    Tensor* x = with_given_rows(g, ub, get_rows(g, tok_embd_, tokens));  // (E, T); an image's rows as given
    for (int64_t il = 0; il < hp_.n_layer; ++il) {
        const Layer& w = layers_[size_t(il)];
        const LayerParams& L = hp_.layers[size_t(il)];
        Tensor* h = rms_norm(g, x, w.attn_norm, eps);
        Tensor* o;
        if (L.recurrent) {
            const int64_t Hv = n_v_heads_, Dv = d_v_;
            Tensor* qkv = mul_mat(g, w.wqkv, h);  // (C, T)
            Tensor* z = mul_mat(g, w.wgate, h);   // (Hv * Dv, T)
            Tensor* b_raw;
            Tensor* a_raw;  // (Hv, T) each
            if (w.ssm_ba) {
                // Split the joint projection per key-head group: one-float rows gathered.
                if (!b_idx) {
                    const int64_t r = Hv / n_k_heads_;
                    std::vector<int32_t> bi, ai;
                    for (int64_t t = 0; t < T; ++t)
                        for (int64_t hh = 0; hh < Hv; ++hh) {
                            const int64_t at = t * 2 * Hv + (hh / r) * 2 * r + hh % r;
                            bi.push_back(int32_t(at));
                            ai.push_back(int32_t(at + r));
                        }
                    b_idx = g.input(DType::I32, {Hv * T}, bi.data(), "ba_b_rows");
                    a_idx = g.input(DType::I32, {Hv * T}, ai.data(), "ba_a_rows");
                }
                Tensor* ba = reshape(g, mul_mat(g, w.ssm_ba, h), {1, 2 * Hv * T});
                b_raw = reshape(g, get_rows(g, ba, b_idx), {Hv, T});
                a_raw = reshape(g, get_rows(g, ba, a_idx), {Hv, T});
            } else {
                b_raw = mul_mat(g, w.ssm_beta, h);
                a_raw = mul_mat(g, w.ssm_alpha, h);
            }
            Tensor* beta = sigmoid(g, b_raw);  // squashed exactly once
            // log-decay g = -exp(A_log) * softplus(alpha + dt_bias)
            Tensor* gate = mul(g, softplus(g, add(g, a_raw, w.dt_bias)), w.ssm_a);
            Tensor* conv_w = conv_kernel_f32(g, w.conv1d, conv_rows);
            Tensor* conv = silu(g, conv1d_scan(g, qkv, conv_w, rs->conv(int(il)), runs_t, order_t));
            const DeltaScanParams dp{int32_t(n_k_heads_), int32_t(d_k_), int32_t(Hv), int32_t(Dv), head_map_,
                                     1.0f / std::sqrt(float(d_k_)), 1e-6f};
            Tensor* y = delta_scan(g, conv, gate, beta, rs->state(int(il)), runs_t, order_t, dp);  // (Dv, Hv, T)
            y = mul(g, rms_norm(g, y, w.ssm_norm, eps), silu(g, reshape(g, z, {Dv, Hv, T})));
            o = mul_mat(g, w.ssm_out, reshape(g, y, {Dv * Hv, T}));
        } else {
            const int64_t hd = L.head_dim_k, H = L.n_head;
            if (!q_idx) {
                std::vector<int32_t> qi, gi;
                for (int64_t t = 0; t < T; ++t)
                    for (int64_t hh = 0; hh < H; ++hh) {
                        qi.push_back(int32_t((t * H + hh) * 2));
                        gi.push_back(int32_t((t * H + hh) * 2 + 1));
                    }
                q_idx = g.input(DType::I32, {T * H}, qi.data(), "q_rows");
                gate_idx = g.input(DType::I32, {T * H}, gi.data(), "gate_rows");
            }
            Tensor* qg = reshape(g, mul_mat(g, w.wq, h), {hd, 2 * H * T});
            Tensor* q = reshape(g, get_rows(g, qg, q_idx), {hd, H, T});
            Tensor* gt = reshape(g, get_rows(g, qg, gate_idx), {hd * H, T});
            Tensor* k = reshape(g, mul_mat(g, w.wk, h), {hd, L.n_head_kv, T});
            Tensor* v = mul_mat(g, w.wv, h);  // (Hkv * hd, T)
            q = rms_norm(g, q, w.q_norm, eps);
            k = rms_norm(g, k, w.k_norm, eps);
            const RopeParams rp{int32_t(n_rot_), ROPE_NEOX, L.rope_base, 1.0f};
            if (mrope && !mrope_cs)
                mrope_cs = rope_table_axes(g, ub.rope_pos.data(), 3, T, rp, mrope_axes_, rope_inv_freq(rp.freq_base, rp.n_dims));
            Tensor* cs = mrope_cs ? mrope_cs : rope_tables(rp);
            q = rope(g, q, cs, rp);
            k = rope(g, k, cs, rp);
            Tensor* att = reshape(g, cached_attention(g, kv, cache_rows, int(il), q, k, v, pos, seq, L.n_head_kv, hp_.attn_scale), {hd * H, T});
            o = mul_mat(g, w.wo, mul(g, att, sigmoid(g, gt)));
        }
        x = add(g, x, o);
        h = rms_norm(g, x, w.post_attn_norm, eps);
        if (w.ffn_gate_inp) {
            x = add(g, x, moe_ffn(g, w, h));
        } else {
            x = add(g, x, gated_ffn(g, h, w.ffn_gate, w.ffn_up, w.ffn_down, GatedAct::Silu));
        }
    }
    return output_head(g, ub, x);
}

// The mixture-of-experts FFN of h [n_embd, T]: router probabilities softmax(W_r h), the
// n_used most probable experts (renormalised to sum 1 unless expert_weights_norm is false),
// each a SwiGLU MLP; their outputs
// weighted and summed in selection order; plus the shared expert times sigmoid(w_s . h).
Tensor* Qwen3Hybrid::moe_ffn(Graph& g, const Layer& w, Tensor* h) const {
    using namespace ops;
    const int64_t k = n_expert_used_, F = n_ff_exp_;
    const MoeRoute r = softmax_topk(g, mul_mat(g, w.ffn_gate_inp, h), int(k), expert_norm_);
    const MoeExperts ex{w.ffn_gate_exps, w.ffn_up_exps, w.ffn_gate_up_exps, w.ffn_down_exps, F, MoeAct::Silu};
    Tensor* out = moe_experts(g, ex, h, r.ids, r.wts);
    if (w.ffn_gate_inp_shexp) {
        Tensor* sh = gated_ffn(g, h, w.ffn_gate_shexp, w.ffn_up_shexp, w.ffn_down_shexp, GatedAct::Silu);
        out = add(g, out, mul(g, sh, sigmoid(g, mul_mat(g, w.ffn_gate_inp_shexp, h))));  // [E, T] x [1, T]
    }
    return out;
}

}  // namespace ls
