#include "core/models/nemotron_h.h"

#include <cmath>
#include <stdexcept>

#include "core/ir/ops.h"
#include "core/models/arch_keys.h"
#include "core/models/attention_block.h"
#include "core/models/scan_inputs.h"

namespace ls {

void NemotronH::load_arch() {
    const GgufFile& f = *file_;
    hp_.arch = f.get_string("general.architecture");
    const ArchKeys keys(f, hp_.arch);
    auto bad = [&](const std::string& what) { throw std::runtime_error(hp_.arch + ": " + what); };
    read_decoder_sizes(keys, 1e-5);
    if (keys.get_int(ArchKey::ExpertCount, 0) != 0) bad("mixture-of-experts layers (Nemotron 3 Nano) are not supported");
    d_conv_ = keys.get_int(ArchKey::SsmConvKernel);
    d_inner_ = keys.get_int(ArchKey::SsmInnerSize);
    d_state_ = keys.get_int(ArchKey::SsmStateSize);
    n_ssm_head_ = keys.get_int(ArchKey::SsmTimeStepRank);
    n_group_ = keys.get_int(ArchKey::SsmGroupCount, 1);
    const int64_t n_head = keys.get_int(ArchKey::HeadCount);
    constexpr int64_t kMax = int64_t(1) << 24;
    for (int64_t v : {hp_.n_embd, d_conv_, d_inner_, d_state_, n_ssm_head_, n_group_, n_head})
        if (v <= 0 || v > kMax) bad("a hyperparameter of " + std::to_string(v) + " is out of range (broken metadata)");
    if (hp_.n_layer <= 0 || hp_.n_layer > 4096 || d_conv_ < 2 || d_conv_ > 16 || d_inner_ % n_ssm_head_ || n_ssm_head_ % n_group_ ||
        d_inner_ % n_group_)
        bad("inconsistent ssm.inner_size / time_step_rank / group_count / conv_kernel in the GGUF metadata");
    // Per layer: head_count_kv and feed_forward_length 0 make a Mamba-2 layer, feed_forward_length
    // 0 alone an attention layer, anything else an MLP layer (llama.cpp's reading).
    const std::vector<int64_t> kv_heads = keys.per_layer(ArchKey::HeadCountKv, hp_.n_layer);
    const std::vector<int64_t> ffn = keys.per_layer(ArchKey::FeedForwardLength, hp_.n_layer);
    const int64_t hd = keys.get_int(ArchKey::KeyLength, hp_.n_embd / n_head);
    if (hd <= 0 || hd > kMax || keys.get_int(ArchKey::ValueLength, hd) != hd) bad("key_length and value_length must be equal and positive");
    hp_.attn_scale = 1.0f / std::sqrt(float(hd));
    for (int64_t il = 0; il < hp_.n_layer; ++il) {
        const int64_t nkv = kv_heads[size_t(il)], F = ffn[size_t(il)];
        if (nkv < 0 || F < 0 || F > (int64_t(1) << 30) || (nkv > 0 && n_head % nkv))
            bad("layer " + std::to_string(il) + ": head_count_kv " + std::to_string(nkv) + " / feed_forward_length " + std::to_string(F) +
                " are inconsistent");
        LayerParams L;
        L.recurrent = nkv == 0 && F == 0;
        if (nkv > 0 && F == 0) {
            L.n_head = int32_t(n_head);
            L.n_head_kv = int32_t(nkv);
            L.head_dim_k = L.head_dim_v = int32_t(hd);
        }
        hp_.layers.push_back(L);
    }

    bind_embeddings();
    const int64_t E = hp_.n_embd, C = d_inner_ + 2 * n_group_ * d_state_, H = n_ssm_head_;
    for (int64_t il = 0; il < hp_.n_layer; ++il) {
        const std::string p = "blk." + std::to_string(il) + ".";
        const LayerParams& L = hp_.layers[size_t(il)];
        const int64_t F = ffn[size_t(il)];
        Layer l{};
        l.norm = norm_weight(p + "attn_norm.weight", E);
        if (L.recurrent) {
            l.kind = Mixer::Mamba;
            l.ssm_in = matmul_weight(p + "ssm_in.weight", E, d_inner_ + C + H);
            l.conv = weight(p + "ssm_conv1d.weight", {d_conv_, C});
            l.conv_b = weight(p + "ssm_conv1d.bias", {C}, false);
            l.dt_b = weight(p + "ssm_dt.bias", {H});
            l.A = weight(p + "ssm_a", {1, H});
            l.D = weight(p + "ssm_d", {1, H});
            l.ssm_norm = weight(p + "ssm_norm.weight", {d_inner_ / n_group_, n_group_});
            l.ssm_out = matmul_weight(p + "ssm_out.weight", d_inner_, E);
            for (Tensor* t : {l.conv_b, l.dt_b, l.A, l.D, l.ssm_norm})
                if (t && t->type != DType::F32) bad("tensor '" + t->name + "' must be F32");
        } else if (F == 0) {
            l.kind = Mixer::Attention;
            l.wq = matmul_weight(p + "attn_q.weight", E, hd * L.n_head);
            l.wk = matmul_weight(p + "attn_k.weight", E, hd * L.n_head_kv);
            l.wv = matmul_weight(p + "attn_v.weight", E, hd * L.n_head_kv);
            l.wo = matmul_weight(p + "attn_output.weight", hd * L.n_head, E);
            l.bq = weight(p + "attn_q.bias", {hd * L.n_head}, false);
            l.bk = weight(p + "attn_k.bias", {hd * L.n_head_kv}, false);
            l.bv = weight(p + "attn_v.bias", {hd * L.n_head_kv}, false);
            l.bo = weight(p + "attn_output.bias", {E}, false);
        } else {
            l.kind = Mixer::Mlp;
            l.up = matmul_weight(p + "ffn_up.weight", E, F);
            l.down = matmul_weight(p + "ffn_down.weight", F, E);
            l.up_b = weight(p + "ffn_up.bias", {F}, false);
            l.down_b = weight(p + "ffn_down.bias", {E}, false);
        }
        layers_.push_back(l);
    }
}

std::vector<RecurrentLayerSpec> NemotronH::recurrent_layout() const {
    std::vector<RecurrentLayerSpec> v;
    const int64_t C = d_inner_ + 2 * n_group_ * d_state_;
    for (const LayerParams& L : hp_.layers)
        v.push_back(L.recurrent ? RecurrentLayerSpec{(d_conv_ - 1) * C, d_inner_ * d_state_} : RecurrentLayerSpec{});
    return v;
}

Tensor* NemotronH::build_graph(Graph& g, const Ubatch& ub, KvCache& kv, RecurrentMemory* rs) const {
    using namespace ops;
    if (!rs) throw std::logic_error("nemotron_h: recurrent memory is required");
    const int64_t T = int64_t(ub.tokens.size()), Di = d_inner_, C = Di + 2 * n_group_ * d_state_, H = n_ssm_head_, P = Di / H,
                  G = n_group_;
    const float eps = hp_.rms_eps;
    Tensor* tokens = g.input(DType::I32, {T}, ub.tokens.data(), "tokens");
    Tensor* pos = g.input(DType::I32, {T}, ub.pos.data(), "pos");
    Tensor* seq = g.input(DType::I32, {T}, ub.seq.data(), "seq");
    const auto [runs_t, order_t] = scan_inputs(g, ub);
    CacheRows cache_rows(g, ub);
    Tensor* conv_rows = nullptr;
    auto biased = [&](Tensor* y, Tensor* b) { return b ? add(g, y, b) : y; };
    const SsmScanParams sp{int32_t(H), int32_t(P), int32_t(d_state_), int32_t(G)};

    Tensor* x = get_rows(g, tok_embd_, tokens);  // (E, T)
    for (int64_t il = 0; il < hp_.n_layer; ++il) {
        const Layer& w = layers_[size_t(il)];
        const LayerParams& L = hp_.layers[size_t(il)];
        Tensor* h = rms_norm(g, x, w.norm, eps);
        Tensor* o;
        if (w.kind == Mixer::Mamba) {
            Tensor* zxd = mul_mat(g, w.ssm_in, h);  // (Di + C + H, T): z, xBC, dt per token
            const size_t rb = size_t(Di + C + H) * 4;
            Tensor* z = cont(g, view_2d(g, zxd, Di, T, rb, 0));
            Tensor* xbc = cont(g, view_2d(g, zxd, C, T, rb, size_t(Di) * 4));
            Tensor* dt = softplus(g, add(g, view_2d(g, zxd, H, T, rb, size_t(Di + C) * 4), w.dt_b));  // (H, T)
            Tensor* conv = conv1d_scan(g, xbc, conv_kernel_f32(g, w.conv, conv_rows), rs->conv(int(il)), runs_t, order_t);
            conv = silu(g, biased(conv, w.conv_b));  // (C, T): x, B, C
            Tensor* y = ssm_scan(g, conv, dt, w.A, rs->state(int(il)), runs_t, order_t, sp);  // (P, H, T)
            Tensor* xs = reshape(g, cont(g, view_2d(g, conv, Di, T, size_t(C) * 4, 0)), {P, H, T});
            y = add(g, y, mul(g, xs, reshape(g, w.D, {1, H, 1})));                       // + D x
            y = mul(g, reshape(g, y, {Di, T}), silu(g, z));                               // gated by silu(z)
            y = mul(g, rms_norm(g, reshape(g, y, {Di / G, G, T}), nullptr, eps), reshape(g, w.ssm_norm, {Di / G, G, 1}));
            o = mul_mat(g, w.ssm_out, reshape(g, y, {Di, T}));
        } else if (w.kind == Mixer::Attention) {
            const int64_t hd = L.head_dim_k;
            Tensor* q = reshape(g, biased(mul_mat(g, w.wq, h), w.bq), {hd, L.n_head, T});
            Tensor* k = reshape(g, biased(mul_mat(g, w.wk, h), w.bk), {hd, L.n_head_kv, T});
            Tensor* v = biased(mul_mat(g, w.wv, h), w.bv);
            Tensor* a = cached_attention(g, kv, cache_rows, int(il), q, k, v, pos, seq, L.n_head_kv, hp_.attn_scale);  // no rope
            o = biased(mul_mat(g, w.wo, reshape(g, a, {hd * L.n_head, T})), w.bo);
        } else {
            Tensor* u = clamp(g, biased(mul_mat(g, w.up, h), w.up_b), 0.0f, INFINITY);  // relu
            o = biased(mul_mat(g, w.down, mul(g, u, u)), w.down_b);                     // of its square
        }
        x = add(g, x, o);
    }
    return output_head(g, ub, x);
}

}  // namespace ls
