#include "core/models/lfm2.h"

#include <cmath>
#include <stdexcept>

#include "core/models/arch_keys.h"
#include "core/ir/ops.h"
#include "core/models/attention_block.h"
#include "core/models/ffn_block.h"
#include "core/models/scan_inputs.h"

namespace ls {

void Lfm2::load_arch() {
    const GgufFile& f = *file_;
    hp_.arch = f.get_string("general.architecture");
    const std::string a = hp_.arch + ".";
    const ArchKeys keys(f, hp_.arch);
    auto bad = [&](const std::string& what) { throw std::runtime_error(hp_.arch + ": " + what); };
    read_decoder_sizes(keys, 1e-5);
    hp_.n_ff = keys.get_int(ArchKey::FeedForwardLength);
    const int64_t n_head = keys.get_int(ArchKey::HeadCount);
    l_cache_ = keys.get_int(ArchKey::ShortconvLCache);
    if (keys.find(ArchKey::SlidingWindow)) bad("sliding-window attention layers are not supported");
    if (keys.get_int(ArchKey::ExpertCount, 0) != 0) bad("mixture-of-experts layers are not supported");
    if (hp_.n_embd <= 0 || hp_.n_layer <= 0 || hp_.n_layer > 4096 || n_head <= 0 || hp_.n_embd % n_head || hp_.n_ff <= 0 ||
        hp_.n_ff > (int64_t(1) << 30) || l_cache_ < 2 || l_cache_ > 16)
        bad("inconsistent embedding_length / block_count / head_count / feed_forward_length / shortconv.l_cache in the GGUF metadata");
    // head_count_kv: per layer (0: a convolution block), or one value for every layer.
    const std::vector<int64_t> kv_heads = keys.per_layer(ArchKey::HeadCountKv, hp_.n_layer);
    const int64_t hd = hp_.n_embd / n_head;
    const int64_t n_rot = keys.get_int(ArchKey::RopeDimensionCount, hd);
    if (n_rot != hd) bad("rope.dimension_count must be the head size");
    const float base = float(keys.get_float(ArchKey::RopeFreqBase, 1000000.0));
    if (!(base > 1.0f) || !std::isfinite(base)) bad("rope.freq_base must be a finite number above 1");
    rope_ = RopeParams{int32_t(hd), ROPE_NEOX, base, 1.0f};
    hp_.attn_scale = 1.0f / std::sqrt(float(hd));
    for (int64_t il = 0; il < hp_.n_layer; ++il) {
        const int64_t nkv = kv_heads[size_t(il)];
        if (nkv < 0 || (nkv > 0 && n_head % nkv)) bad("layer " + std::to_string(il) + ": head_count_kv " + std::to_string(nkv) + " does not divide head_count");
        LayerParams L;
        L.recurrent = nkv == 0;
        L.rope_base = base;
        L.n_head = int32_t(n_head);
        L.n_head_kv = int32_t(nkv);
        L.head_dim_k = L.head_dim_v = int32_t(hd);
        hp_.layers.push_back(L);
    }

    // The final norm is token_embd_norm in LFM2's files (HF's embedding_norm).
    const GgufTensorInfo* te = f.find_tensor("token_embd.weight");
    if (!te) bad("model is missing tensor 'token_embd.weight'");
    const int64_t E = hp_.n_embd, F = hp_.n_ff;
    hp_.n_vocab = te->ne[1];
    tok_embd_ = matmul_weight("token_embd.weight", E, hp_.n_vocab);
    output_norm_ = norm_weight("token_embd_norm.weight", E);
    output_ = f.find_tensor("output.weight") ? matmul_weight("output.weight", E, hp_.n_vocab) : tok_embd_;
    for (int64_t il = 0; il < hp_.n_layer; ++il) {
        const std::string p = "blk." + std::to_string(il) + ".";
        const LayerParams& L = hp_.layers[size_t(il)];
        Layer l{};
        l.attn_norm = norm_weight(p + "attn_norm.weight", E);
        l.ffn_norm = norm_weight(p + "ffn_norm.weight", E);
        if (L.recurrent) {
            l.in_proj = matmul_weight(p + "shortconv.in_proj.weight", E, 3 * E);
            l.conv = weight(p + "shortconv.conv.weight", {l_cache_, E});
            l.out_proj = matmul_weight(p + "shortconv.out_proj.weight", E, E);
        } else {
            l.wq = matmul_weight(p + "attn_q.weight", E, hd * n_head);
            l.wk = matmul_weight(p + "attn_k.weight", E, hd * L.n_head_kv);
            l.wv = matmul_weight(p + "attn_v.weight", E, hd * L.n_head_kv);
            l.wo = matmul_weight(p + "attn_output.weight", hd * n_head, E);
            l.q_norm = norm_weight(p + "attn_q_norm.weight", hd);
            l.k_norm = norm_weight(p + "attn_k_norm.weight", hd);
        }
        l.ffn_gate = matmul_weight(p + "ffn_gate.weight", E, F);
        l.ffn_up = matmul_weight(p + "ffn_up.weight", E, F);
        l.ffn_down = matmul_weight(p + "ffn_down.weight", F, E);
        layers_.push_back(l);
    }
}

std::vector<RecurrentLayerSpec> Lfm2::recurrent_layout() const {
    return same_state_on_recurrent_layers({(l_cache_ - 1) * hp_.n_embd, 0});  // the convolution's state alone
}

Tensor* Lfm2::build_graph(Graph& g, const Ubatch& ub, KvCache& kv, RecurrentMemory* rs) const {
    using namespace ops;
    if (!rs) throw std::logic_error("lfm2: recurrent memory is required");
    const int64_t T = int64_t(ub.tokens.size()), E = hp_.n_embd;
    const float eps = hp_.rms_eps;
    Tensor* tokens = g.input(DType::I32, {T}, ub.tokens.data(), "tokens");
    Tensor* pos = g.input(DType::I32, {T}, ub.pos.data(), "pos");
    Tensor* seq = g.input(DType::I32, {T}, ub.seq.data(), "seq");
    const auto [runs_t, order_t] = scan_inputs(g, ub);
    CacheRows cache_rows(g, ub);
    Tensor* rope_cs = RopeTables(g, ub.pos)(rope_);
    Tensor* conv_rows = nullptr;  // all rows of a conv kernel that is not f32

    Tensor* x = get_rows(g, tok_embd_, tokens);  // (E, T)
    for (int64_t il = 0; il < hp_.n_layer; ++il) {
        const Layer& w = layers_[size_t(il)];
        const LayerParams& L = hp_.layers[size_t(il)];
        Tensor* h = rms_norm(g, x, w.attn_norm, eps);
        Tensor* o;
        if (L.recurrent) {
            // in_proj's output per token is [B, C, x], n_embd each: views of its rows.
            Tensor* bcx = mul_mat(g, w.in_proj, h);  // (3E, T)
            const size_t row_bytes = size_t(3 * E) * 4;
            auto part = [&](int64_t i) { return view_2d(g, bcx, E, T, row_bytes, size_t(i * E) * 4); };
            Tensor* bx = mul(g, part(0), part(2));  // (E, T)
            Tensor* conv_w = conv_kernel_f32(g, w.conv, conv_rows);
            Tensor* conv = conv1d_scan(g, bx, conv_w, rs->conv(int(il)), runs_t, order_t);
            o = mul_mat(g, w.out_proj, mul(g, part(1), conv));
        } else {
            const int64_t hd = L.head_dim_k;
            Tensor* q = rms_norm(g, reshape(g, mul_mat(g, w.wq, h), {hd, L.n_head, T}), w.q_norm, eps);
            Tensor* k = rms_norm(g, reshape(g, mul_mat(g, w.wk, h), {hd, L.n_head_kv, T}), w.k_norm, eps);
            Tensor* v = mul_mat(g, w.wv, h);
            q = rope(g, q, rope_cs, rope_);
            k = rope(g, k, rope_cs, rope_);
            Tensor* a = cached_attention(g, kv, cache_rows, int(il), q, k, v, pos, seq, L.n_head_kv, hp_.attn_scale);
            o = mul_mat(g, w.wo, reshape(g, a, {hd * L.n_head, T}));
        }
        x = add(g, x, o);
        h = rms_norm(g, x, w.ffn_norm, eps);
        x = add(g, x, gated_ffn(g, h, w.ffn_gate, w.ffn_up, w.ffn_down, GatedAct::Silu));
    }
    return output_head(g, ub, x);
}

}  // namespace ls
