#include "core/vision/gemma4_vision.h"

#include <cmath>
#include <cstring>
#include <stdexcept>

#include "core/gguf/gguf.h"
#include "core/image/pixels.h"
#include "core/image/resize.h"
#include "core/ir/ops.h"

namespace ls {

namespace {
constexpr float kRopeTheta = 100.0f;  // the vision rope's base (HF's config; llama.cpp hard-codes it too)
}  // namespace

Gemma4Vision::Linear Gemma4Vision::linear(const std::string& name, int64_t k, int64_t n) {
    Linear l;
    l.w = matmul_weight(name + ".weight", k, n);
    const std::string b = name + ".";
    if (file_->find_tensor(b + "input_min")) {
        l.clamped = true;
        l.in_min = host_f32(b + "input_min", 1)[0];
        l.in_max = host_f32(b + "input_max", 1)[0];
        l.out_min = host_f32(b + "output_min", 1)[0];
        l.out_max = host_f32(b + "output_max", 1)[0];
        for (float v : {l.in_min, l.in_max, l.out_min, l.out_max})
            if (std::isnan(v)) throw std::runtime_error("gemma4v projector: a NaN clamp bound on '" + name + "'");
        if (!(l.in_min <= l.in_max) || !(l.out_min <= l.out_max))
            throw std::runtime_error("gemma4v projector: clamp bounds of '" + name + "' with min above max");
    }
    return l;
}

Tensor* Gemma4Vision::apply(Graph& g, const Linear& l, Tensor* x) {
    using namespace ops;
    if (!l.clamped) return mul_mat(g, l.w, x);
    return clamp(g, mul_mat(g, l.w, clamp(g, x, l.in_min, l.in_max)), l.out_min, l.out_max);
}

void Gemma4Vision::load_arch() {
    const GgufFile& f = *file_;
    projector_ = "gemma4v";
    text_archs_ = {"gemma4"};
    hp_.arch = "clip";
    auto bad = [](const std::string& what) { throw std::runtime_error("gemma4v projector: " + what); };
    const int64_t E = f.get_int("clip.vision.embedding_length"), F = f.get_int("clip.vision.feed_forward_length");
    const int64_t L = f.get_int("clip.vision.block_count"), H = f.get_int("clip.vision.attention.head_count");
    const int64_t P = f.get_int("clip.vision.patch_size"), k = f.get_int("clip.vision.projector.scale_factor", 3);
    eps_ = float(f.get_float("clip.vision.attention.layer_norm_epsilon", 1e-6));
    constexpr int64_t kMax = int64_t(1) << 20;
    for (int64_t v : {E, F, L, H, P, k})
        if (v <= 0 || v > kMax) bad("a hyperparameter of " + std::to_string(v) + " is out of range (broken metadata)");
    if (E % H || (E / H) % 4 || P > 64 || k > 16) bad("inconsistent sizes (embedding_length a multiple of 4 head_count)");
    if (!(eps_ > 0.f) || !std::isfinite(eps_)) bad("attention.layer_norm_epsilon must be a positive number");
    patch_ = int(P);
    n_head_ = int(H);
    kernel_ = int(k);
    read_mean_std("gemma4v");
    hp_.n_embd = E;
    hp_.n_layer = L;
    hp_.n_ff = F;
    hp_.attn_scale = 1.0f;  // q and k are RMS-normed per head: HF scales scores by 1
    const int64_t hd = E / H;
    patch_w_ = weight("v.patch_embd.weight", {P, P, 3, E});
    // The x and y position tables, read on the host: each image's graph takes its own rows.
    const GgufTensorInfo* pt = f.find_tensor("v.position_embd.weight");
    if (!pt || pt->type != DType::F32 || pt->ne[0] != E || pt->ne[2] != 2 || pt->ne[3] != 1)
        bad("tensor 'v.position_embd.weight' must be f32 [" + std::to_string(E) + ", size, 2]");
    pos_size_ = pt->ne[1];
    pos_.resize(size_t(E * pos_size_ * 2));
    std::memcpy(pos_.data(), pt->data, pos_.size() * sizeof(float));
    for (int64_t il = 0; il < L; ++il) {
        const std::string p = "v.blk." + std::to_string(il) + ".";
        Layer l;
        l.ln1 = norm_weight(p + "ln1.weight", E);
        l.attn_post = norm_weight(p + "attn_post_norm.weight", E);
        l.ln2 = norm_weight(p + "ln2.weight", E);
        l.ffn_post = norm_weight(p + "ffn_post_norm.weight", E);
        l.q_norm = norm_weight(p + "attn_q_norm.weight", hd);
        l.k_norm = norm_weight(p + "attn_k_norm.weight", hd);
        l.q = linear(p + "attn_q", E, E);
        l.k = linear(p + "attn_k", E, E);
        l.v = linear(p + "attn_v", E, E);
        l.o = linear(p + "attn_out", E, E);
        l.gate = linear(p + "ffn_gate", E, F);
        l.up = linear(p + "ffn_up", E, F);
        l.down = linear(p + "ffn_down", F, E);
        layers_.push_back(l);
    }
    neg_std_bias_ = host_f32("v.std_bias", E);
    for (float& b : neg_std_bias_) b = -b;
    std_scale_ = norm_weight("v.std_scale", E);
    const GgufTensorInfo* pi = f.find_tensor("mm.input_projection.weight");
    if (!pi) bad("missing tensor 'mm.input_projection.weight'");
    n_out_ = pi->ne[1];
    proj_ = matmul_weight("mm.input_projection.weight", E, n_out_);
}

void Gemma4Vision::set_image_tokens(int64_t, int64_t max_tokens) {
    if (max_tokens < 0 || max_tokens > (int64_t(1) << 16))
        throw std::invalid_argument("image token budget of " + std::to_string(max_tokens) + " is out of range (--image-max-tokens)");
    budget_ = max_tokens > 0 ? max_tokens : 280;
}

std::array<int, 2> Gemma4Vision::resized(const image::Rgb8& img) const {
    // HF's get_aspect_ratio_preserving_size (image_processing_gemma4): the largest size whose
    // sides are multiples of s = patch x kernel and whose patches fit budget x kernel^2, at the
    // image's aspect ratio, each side rounded down on its own; up- or downscaled to fill it.
    const double H = img.height, W = img.width, s = double(patch_) * kernel_;
    const double max_patches = double(budget_) * kernel_ * kernel_;
    const double factor = std::sqrt(max_patches * patch_ * patch_ / (H * W));
    double h = std::floor(factor * H / s) * s, w = std::floor(factor * W / s) * s;
    if (h == 0 && w == 0) throw std::invalid_argument("image of " + std::to_string(img.width) + "x" + std::to_string(img.height) + " cannot be sized for Gemma 4");
    if (h == 0) h = s, w = std::min(std::floor(W / H) * s, double(budget_) * s);
    else if (w == 0) w = s, h = std::min(std::floor(H / W) * s, double(budget_) * s);
    if (h * w / (double(patch_) * patch_) > max_patches) throw std::invalid_argument("image sized past its token budget");
    return {int(h), int(w)};
}

std::array<int64_t, 2> Gemma4Vision::token_grid(const image::Rgb8& img) const {
    const std::array<int, 2> r = resized(img);
    const int64_t s = int64_t(patch_) * kernel_;
    return {r[0] / s, r[1] / s};
}

VisionEncoder::Pixels Gemma4Vision::preprocess(const image::Rgb8& img) const {
    // The PIL processor: resize with Pillow's bicubic filter unless the size is already right,
    // rescale by 1/255 (the file's mean 0 and std 1 leave it so).
    const std::array<int, 2> r = resized(img);
    if (r[0] == img.height && r[1] == img.width) return {image::normalize(img, mean_, std_), r[0], r[1]};
    const image::Rgb8 im = image::resize(img, r[1], r[0], image::Filter::Bicubic);
    return {image::normalize(im, mean_, std_), r[0], r[1]};
}

std::string Gemma4Vision::image_text(int64_t n) const {
    // Gemma4Processor's expansion (nothing around it, unlike Gemma 3's blank lines).
    std::string s = "<|image>";
    for (int64_t i = 0; i < n; ++i) s += soft_token();
    return s + "<image|>";
}

Tensor* Gemma4Vision::build_image_graph(Graph& g, const Pixels& px) const {
    using namespace ops;
    const int64_t E = hp_.n_embd, P = patch_, H = n_head_, hd = E / H, k = kernel_;
    const int64_t ph = px.h / P, pw = px.w / P, N = ph * pw;
    if (px.h % (P * k) || px.w % (P * k)) throw std::logic_error("gemma4v: pixels of a size the pooling does not divide");
    if (ph > pos_size_ || pw > pos_size_)
        throw std::invalid_argument("image of " + std::to_string(pw) + "x" + std::to_string(ph) + " patches: more than the " +
                                    std::to_string(pos_size_) + " positions a side the projector has");
    // x = 2 (pixel - 0.5), patches row by row; plus the x and y position rows.
    std::vector<float> chw = px.chw;
    for (float& v : chw) v = 2.0f * (v - 0.5f);
    const std::vector<float> patches = image::unfold_patches(chw, px.h, px.w, patch_);
    std::vector<float> pos(size_t(E * N));
    std::vector<int32_t> pxs(static_cast<size_t>(N)), pys(static_cast<size_t>(N));
    for (int64_t n = 0; n < N; ++n) {
        const int64_t yy = n / pw, xx = n % pw;
        pxs[size_t(n)] = int32_t(xx), pys[size_t(n)] = int32_t(yy);
        const float* tx = pos_.data() + xx * E;
        const float* ty = pos_.data() + (pos_size_ + yy) * E;
        for (int64_t e = 0; e < E; ++e) pos[size_t(n * E + e)] = tx[e] + ty[e];
    }
    Tensor* x = mul_mat(g, reshape(g, patch_w_, {3 * P * P, E}), g.input(DType::F32, {3 * P * P, N}, patches.data(), "patches"));
    x = add(g, x, g.input(DType::F32, {E, N}, pos.data(), "pos_embd"));
    // 2D rope: each half of a head rotated on its own (NeoX pairs within the half), the first
    // by the patch's column, the second by its row.
    const RopeParams rp{int32_t(hd / 2), ROPE_NEOX, kRopeTheta, 1.0f};
    Tensor* cs_x = rope_table(g, pxs.data(), N, rp, nullptr);
    Tensor* cs_y = rope_table(g, pys.data(), N, rp, nullptr);
    auto rope2d = [&](Tensor* t) {  // t (hd, H, N)
        auto half = [&](int64_t i) {
            return reshape(g, cont(g, view_2d(g, t, hd / 2, H * N, size_t(hd) * sizeof(float), size_t(i * hd / 2) * sizeof(float))),
                           {hd / 2, H, N});
        };
        return concat(g, rope(g, half(0), cs_x, rp), rope(g, half(1), cs_y, rp));
    };
    std::vector<int32_t> last(size_t(N), int32_t(N - 1)), seq(size_t(N), 0);
    Tensor* pos_in = g.input(DType::I32, {N}, last.data(), "last_key");
    Tensor* seq_in = g.input(DType::I32, {N}, seq.data(), "seq");
    const AttentionParams ap{0, int32_t(N), n_head_, hp_.attn_scale, 0.f};
    for (const Layer& l : layers_) {
        Tensor* h = rms_norm(g, x, l.ln1, eps_);
        Tensor* q = rope2d(rms_norm(g, reshape(g, apply(g, l.q, h), {hd, H, N}), l.q_norm, eps_));
        Tensor* kk = rope2d(rms_norm(g, reshape(g, apply(g, l.k, h), {hd, H, N}), l.k_norm, eps_));
        Tensor* v = rms_norm(g, reshape(g, apply(g, l.v, h), {hd, H, N}), nullptr, eps_);
        Tensor* a = attention(g, q, reshape(g, kk, {E, N}), reshape(g, v, {E, N}), pos_in, seq_in, ap);
        x = add(g, x, rms_norm(g, apply(g, l.o, reshape(g, a, {E, N})), l.attn_post, eps_));
        h = rms_norm(g, x, l.ln2, eps_);
        Tensor* f = apply(g, l.down, mul(g, gelu(g, apply(g, l.gate, h)), apply(g, l.up, h)));
        x = add(g, x, rms_norm(g, f, l.ffn_post, eps_));
    }
    // k x k average pool: token (ty, tx) the mean of patches (k ty + dy, k tx + dx), summed in
    // (dy, dx) order, then times sqrt(n_embd); standardized; RMS norm; projection.
    const int64_t th = ph / k, tw = pw / k, T = th * tw;
    Tensor* pooled = nullptr;
    std::vector<std::vector<int32_t>> rows(size_t(k * k));
    for (int64_t dy = 0; dy < k; ++dy)
        for (int64_t dx = 0; dx < k; ++dx) {
            std::vector<int32_t>& r = rows[size_t(dy * k + dx)];
            for (int64_t ty = 0; ty < th; ++ty)
                for (int64_t tx = 0; tx < tw; ++tx) r.push_back(int32_t((k * ty + dy) * pw + k * tx + dx));
            Tensor* got = get_rows(g, x, g.input(DType::I32, {T}, r.data(), "pool_rows"));
            pooled = pooled ? add(g, pooled, got) : got;
        }
    pooled = scale(g, scale(g, pooled, 1.0f / float(k * k)), float(std::sqrt(double(E))));
    pooled = mul(g, add(g, pooled, g.input(DType::F32, {E}, neg_std_bias_.data(), "neg_std_bias")), std_scale_);
    Tensor* out = mul_mat(g, proj_, rms_norm(g, pooled, nullptr, eps_));
    g.mark_output(out);
    return out;
}

}  // namespace ls
