#include "core/vision/qwen3vl_vision.h"

#include <cmath>
#include <stdexcept>

#include "core/gguf/gguf.h"
#include "core/image/pixels.h"
#include "core/image/resize.h"
#include "core/ir/ops.h"
#include "core/quant/quant.h"
#include "core/rules/rope_rule.h"

namespace ls {

namespace {
// HF's Qwen3.5 / Qwen3-VL processor budget: at least 65536 pixels (64 tokens of 32 x 32); at
// most llama.cpp's 4096 tokens (HF allows 16384, more than default contexts hold).
constexpr int64_t kMinPixels = 65536, kMaxPixels = 4096 * 32 * 32;
constexpr float kRopeTheta = 10000.0f;  // the vision rope's base (HF's rope_theta; llama.cpp's)
}  // namespace

void Qwen3VLVision::load_arch() {
    const GgufFile& f = *file_;
    projector_ = "qwen3vl_merger";
    text_archs_ = {"qwen35", "qwen35moe", "qwen3vl", "qwen3vlmoe"};
    hp_.arch = "clip";
    auto bad = [](const std::string& what) { throw std::runtime_error("qwen3vl_merger projector: " + what); };
    const int64_t E = f.get_int("clip.vision.embedding_length"), F = f.get_int("clip.vision.feed_forward_length");
    const int64_t L = f.get_int("clip.vision.block_count"), H = f.get_int("clip.vision.attention.head_count");
    const int64_t S = f.get_int("clip.vision.image_size"), P = f.get_int("clip.vision.patch_size");
    const int64_t m = f.get_int("clip.vision.spatial_merge_size", 2);
    eps_ = float(f.get_float("clip.vision.attention.layer_norm_epsilon", 1e-6));
    min_pixels_ = f.get_int("clip.vision.image_min_pixels", kMinPixels);
    max_pixels_ = f.get_int("clip.vision.image_max_pixels", kMaxPixels);
    constexpr int64_t kMax = int64_t(1) << 20;
    for (int64_t v : {E, F, L, H, S, P, m})
        if (v <= 0 || v > kMax) bad("a hyperparameter of " + std::to_string(v) + " is out of range (broken metadata)");
    if (E % H || (E / H) % 4 || S % P || P > 64 || m > 8)
        bad("inconsistent sizes (embedding_length a multiple of 4 head_count, image_size of patch_size)");
    if (!(eps_ > 0.f) || !std::isfinite(eps_)) bad("attention.layer_norm_epsilon must be a positive number");
    if (min_pixels_ < 1 || max_pixels_ < min_pixels_ || max_pixels_ > (int64_t(1) << 28))
        bad("image_min_pixels and image_max_pixels must satisfy 1 <= min <= max <= 2^28");
    file_pixels_ = {min_pixels_, max_pixels_};
    // Qwen3-VL's deepstack: the layers whose outputs also go through a merger of their own.
    std::vector<bool> deepstack(size_t(L), false);
    if (f.find("clip.vision.is_deepstack_layers")) {
        const std::vector<bool> flags = f.get_bool_array("clip.vision.is_deepstack_layers");
        if (flags.size() != size_t(L))
            bad("is_deepstack_layers holds " + std::to_string(flags.size()) + " flags for " + std::to_string(L) + " layers");
        deepstack = flags;
    }
    if (f.find_tensor("v.patch_embd.weight.1") == nullptr) bad("missing tensor 'v.patch_embd.weight.1' (the second temporal kernel)");
    patch_ = int(P);
    merge_ = int(m);
    n_head_ = int(H);
    grid_side_ = int(S / P);
    read_mean_std("qwen3vl_merger");
    hp_.n_embd = E;
    hp_.n_layer = L;
    hp_.n_ff = F;
    hp_.attn_scale = 1.0f / std::sqrt(float(E / H));
    // Host copies, as every image's graph takes them in its own shape: the patch kernel (the
    // Conv3d's two temporal halves summed, as both see the same image) and the position table.
    auto host_all = [&](const std::string& name, std::initializer_list<int64_t> ne) {
        const GgufTensorInfo* t = f.find_tensor(name);
        if (!t) bad("missing tensor '" + name + "'");
        int i = 0;
        for (int64_t n : ne)
            if (t->ne[i++] != n) bad("tensor '" + name + "' has the wrong shape");
        for (; i < kMaxDims; ++i)
            if (t->ne[i] != 1) bad("tensor '" + name + "' has the wrong shape");
        if (!can_dequantize(t->type) || t->ne[0] % block_size(t->type)) bad("tensor '" + name + "' has a type lockstep cannot read here");
        const int64_t n0 = t->ne[0], rows = t->ne[1] * t->ne[2] * t->ne[3];
        std::vector<float> v(size_t(n0 * rows));
        const size_t rb = row_bytes(t->type, n0);
        for (int64_t r = 0; r < rows; ++r) dequantize_row(t->type, t->data + size_t(r) * rb, v.data() + size_t(r * n0), n0);
        return v;
    };
    patch_w_ = host_all("v.patch_embd.weight", {P, P, 3, E});
    const std::vector<float> w1 = host_all("v.patch_embd.weight.1", {P, P, 3, E});
    for (size_t i = 0; i < patch_w_.size(); ++i) patch_w_[i] += w1[i];
    pos_ = host_all("v.position_embd.weight", {E, int64_t(grid_side_) * grid_side_});
    patch_b_ = norm_weight("v.patch_embd.bias", E);
    for (int64_t il = 0; il < L; ++il) {
        const std::string p = "v.blk." + std::to_string(il) + ".";
        Layer l;
        l.ln1 = {norm_weight(p + "ln1.weight", E), norm_weight(p + "ln1.bias", E)};
        l.ln2 = {norm_weight(p + "ln2.weight", E), norm_weight(p + "ln2.bias", E)};
        l.qkv = matmul_weight(p + "attn_qkv.weight", E, 3 * E);
        l.qkv_b = norm_weight(p + "attn_qkv.bias", 3 * E);
        l.out = matmul_weight(p + "attn_out.weight", E, E);
        l.out_b = norm_weight(p + "attn_out.bias", E);
        l.up = matmul_weight(p + "ffn_up.weight", E, F);
        l.up_b = norm_weight(p + "ffn_up.bias", F);
        l.down = matmul_weight(p + "ffn_down.weight", F, E);
        l.down_b = norm_weight(p + "ffn_down.bias", E);
        layers_.push_back(l);
    }
    merge_ln_ = {norm_weight("v.post_ln.weight", E), norm_weight("v.post_ln.bias", E)};
    const int64_t M = E * m * m;
    const GgufTensorInfo* out = f.find_tensor("mm.2.weight");
    if (!out) bad("missing tensor 'mm.2.weight'");
    const int64_t n_text = out->ne[1];
    mm0_ = matmul_weight("mm.0.weight", M, M);
    mm0_b_ = norm_weight("mm.0.bias", M);
    mm2_ = matmul_weight("mm.2.weight", M, n_text);
    mm2_b_ = norm_weight("mm.2.bias", n_text);
    for (int64_t il = 0; il < L; ++il) {
        if (!deepstack[size_t(il)]) continue;
        const std::string p = "v.deepstack." + std::to_string(il) + ".";
        Deepstack d;
        d.layer = il;
        d.norm = {norm_weight(p + "norm.weight", M), norm_weight(p + "norm.bias", M)};
        d.fc1 = matmul_weight(p + "fc1.weight", M, M);
        d.fc1_b = norm_weight(p + "fc1.bias", M);
        d.fc2 = matmul_weight(p + "fc2.weight", M, n_text);
        d.fc2_b = norm_weight(p + "fc2.bias", n_text);
        deepstack_.push_back(d);
    }
    // A token's row: the merger's output, then each deepstack merger's, in layer order (the
    // text model adds row d + 1 after its layer d).
    n_out_ = n_text * int64_t(1 + deepstack_.size());
}

void Qwen3VLVision::set_image_tokens(int64_t min_tokens, int64_t max_tokens) {
    const int64_t per = int64_t(patch_) * merge_ * patch_ * merge_;  // pixels per token
    const int64_t lo = min_tokens > 0 ? min_tokens * per : file_pixels_[0], hi = max_tokens > 0 ? max_tokens * per : file_pixels_[1];
    if (min_tokens < 0 || max_tokens < 0 || max_tokens > (int64_t(1) << 20) || min_tokens > (int64_t(1) << 20) || lo > hi)
        throw std::invalid_argument("image token budget: at least " + std::to_string(lo / per) + " and at most " + std::to_string(hi / per) +
                                    " tokens per image cannot both hold (--image-min-tokens, --image-max-tokens)");
    min_pixels_ = lo, max_pixels_ = hi;
}

std::array<int, 2> Qwen3VLVision::resized(const image::Rgb8& img) const {
    // HF's smart_resize (image_processing_qwen2_vl.py): each side rounded to a multiple of the
    // factor (Python's round: halves to even), then scaled into [min_pixels, max_pixels].
    const double h = img.height, w = img.width, f = double(patch_) * merge_;
    if (std::max(h, w) / std::min(h, w) > 200)
        throw std::invalid_argument("image of " + std::to_string(img.width) + "x" + std::to_string(img.height) +
                                    ": its aspect ratio is over 200 (the Qwen-VL processor refuses it)");
    double hb = std::nearbyint(h / f) * f, wb = std::nearbyint(w / f) * f;
    if (hb * wb > double(max_pixels_)) {
        const double beta = std::sqrt(h * w / double(max_pixels_));
        hb = std::max(f, std::floor(h / beta / f) * f);
        wb = std::max(f, std::floor(w / beta / f) * f);
    } else if (hb * wb < double(min_pixels_)) {
        const double beta = std::sqrt(double(min_pixels_) / (h * w));
        hb = std::ceil(h * beta / f) * f;
        wb = std::ceil(w * beta / f) * f;
    }
    if (hb > 65536 || wb > 65536) throw std::invalid_argument("image resized beyond 65536 pixels a side");
    return {int(hb), int(wb)};
}

std::array<int64_t, 2> Qwen3VLVision::token_grid(const image::Rgb8& img) const {
    const std::array<int, 2> r = resized(img);
    const int64_t f = int64_t(patch_) * merge_;
    return {r[0] / f, r[1] / f};
}

VisionEncoder::Pixels Qwen3VLVision::preprocess(const image::Rgb8& img) const {
    // Qwen2VLImageProcessor (the PIL one): resize with PIL's bicubic filter to smart_resize's
    // size, rescale by 1/255, normalize with the file's mean and std.
    const std::array<int, 2> r = resized(img);
    const image::Rgb8 im = image::resize(img, r[1], r[0], image::Filter::Bicubic);
    return {image::normalize(im, mean_, std_), r[0], r[1]};
}

std::string Qwen3VLVision::image_text(int64_t n) const {
    // The Qwen-VL processors' expansion of an image: its pads between vision start and end.
    std::string s = "<|vision_start|>";
    for (int64_t i = 0; i < n; ++i) s += soft_token();
    return s + "<|vision_end|>";
}

Tensor* Qwen3VLVision::build_image_graph(Graph& g, const Pixels& px) const {
    using namespace ops;
    const int64_t E = hp_.n_embd, P = patch_, m = merge_, H = n_head_, hd = E / H, G = grid_side_;
    const int64_t gh = px.h / P, gw = px.w / P, N = gh * gw;
    if (px.h % (P * m) || px.w % (P * m)) throw std::logic_error("qwen3vl_merger: pixels of a size the merge does not divide");
    // Patches block by block (each m x m block's patches consecutive, row by row inside it):
    // the order HF's processor gives them, so that the merger's blocks are whole rows.
    std::vector<int32_t> place(size_t(2 * N));  // per patch: its grid row and column
    {
        int64_t k = 0;
        for (int64_t br = 0; br < gh / m; ++br)
            for (int64_t bc = 0; bc < gw / m; ++bc)
                for (int64_t ir = 0; ir < m; ++ir)
                    for (int64_t ic = 0; ic < m; ++ic, ++k) {
                        place[size_t(2 * k)] = int32_t(br * m + ir);
                        place[size_t(2 * k + 1)] = int32_t(bc * m + ic);
                    }
    }
    const std::vector<float> raster = image::unfold_patches(px.chw, px.h, px.w, patch_);
    const int64_t K = 3 * P * P;
    std::vector<float> patches(size_t(K * N));
    for (int64_t k = 0; k < N; ++k) {
        const int64_t from = int64_t(place[size_t(2 * k)]) * gw + place[size_t(2 * k + 1)];
        std::copy_n(raster.begin() + from * K, K, patches.begin() + k * K);
    }
    Tensor* x = mul_mat(g, g.input(DType::F32, {K, E}, patch_w_.data(), "patch_kernel"), g.input(DType::F32, {K, N}, patches.data(), "patches"));
    x = add(g, x, patch_b_);
    // Learned positions resampled to the patch grid (HF's bilinear taps with align_corners, in
    // float32): per axis, source = i (G - 1) / max(n - 1, 1), its floor and the next row (the
    // last clamped), weights 1 - distance; the four products summed in (h0 w0, h0 w1, h1 w0, h1 w1).
    std::vector<float> pos(size_t(E * N));
    auto taps = [&](int32_t i, int64_t n, int32_t t[2], float w[2]) {
        const float src = (float(i) * float(G - 1)) / float(std::max<int64_t>(n - 1, 1));
        const float fl = std::floor(src);
        for (int o = 0; o < 2; ++o) {
            t[o] = std::min(int32_t(fl) + o, int32_t(G - 1));
            w[o] = std::max(1.0f - std::fabs((src - fl) - float(o)), 0.0f);
        }
    };
    for (int64_t k = 0; k < N; ++k) {
        int32_t th[2], tw[2];
        float wh[2], ww[2];
        taps(place[size_t(2 * k)], gh, th, wh);
        taps(place[size_t(2 * k + 1)], gw, tw, ww);
        float* o = pos.data() + k * E;
        for (int a = 0; a < 2; ++a)
            for (int b = 0; b < 2; ++b) {
                const float wt = wh[a] * ww[b];
                const float* row = pos_.data() + (int64_t(th[a]) * G + tw[b]) * E;
                for (int64_t e = 0; e < E; ++e) o[e] = o[e] + row[e] * wt;
            }
    }
    x = add(g, x, g.input(DType::F32, {E, N}, pos.data(), "pos_embd"));
    // 2D rope over each head's hd / 2 pairs: the first half turned by the patch's row, the
    // second by its column, each half its own series theta^(-2j / (hd / 2)).
    const RopeParams rp{int32_t(hd), ROPE_NEOX, kRopeTheta, 1.0f};
    std::vector<int32_t> axis(size_t(hd / 2));
    std::vector<double> inv(size_t(hd / 2));
    for (int64_t i = 0; i < hd / 2; ++i) {
        axis[size_t(i)] = i < hd / 4 ? 0 : 1;
        inv[size_t(i)] = std::pow(double(kRopeTheta), -2.0 * double(i % (hd / 4)) / double(hd / 2));
    }
    Tensor* cs = rope_table_axes(g, place.data(), 2, N, rp, axis, inv);
    // Every patch sees every patch of the image (ring of N rows, each query's last key N - 1).
    std::vector<int32_t> last(size_t(N), int32_t(N - 1)), seq(size_t(N), 0);
    Tensor* pos_in = g.input(DType::I32, {N}, last.data(), "last_key");
    Tensor* seq_in = g.input(DType::I32, {N}, seq.data(), "seq");
    const AttentionParams ap{0, int32_t(N), n_head_, hp_.attn_scale, 0.f};
    std::vector<Tensor*> stacked;  // the deepstack mergers' outputs
    for (size_t il = 0; il < layers_.size(); ++il) {
        const Layer& l = layers_[il];
        Tensor* h = layer_norm(g, x, l.ln1.w, l.ln1.b, eps_);
        Tensor* qkv = add(g, mul_mat(g, l.qkv, h), l.qkv_b);  // (3E, N): q, k, v
        auto part = [&](int64_t i) { return cont(g, view_2d(g, qkv, E, N, qkv->nb[1], size_t(i * E) * sizeof(float))); };
        Tensor* q = rope(g, reshape(g, part(0), {hd, H, N}), cs, rp);
        Tensor* k = reshape(g, rope(g, reshape(g, part(1), {hd, H, N}), cs, rp), {E, N});
        Tensor* a = attention(g, q, k, part(2), pos_in, seq_in, ap);
        x = add(g, x, add(g, mul_mat(g, l.out, reshape(g, a, {E, N})), l.out_b));
        h = layer_norm(g, x, l.ln2.w, l.ln2.b, eps_);
        Tensor* f = gelu(g, add(g, mul_mat(g, l.up, h), l.up_b));
        x = add(g, x, add(g, mul_mat(g, l.down, f), l.down_b));
        for (const Deepstack& d : deepstack_) {
            if (d.layer != int64_t(il)) continue;
            // HF's postshuffle merger: the block's m * m patches as one row first, then its
            // LayerNorm over the whole row, two linear layers with the exact GELU between.
            Tensor* s = layer_norm(g, reshape(g, x, {E * m * m, N / (m * m)}), d.norm.w, d.norm.b, eps_);
            s = gelu_erf(g, add(g, mul_mat(g, d.fc1, s), d.fc1_b));
            stacked.push_back(add(g, mul_mat(g, d.fc2, s), d.fc2_b));
        }
    }
    // The merger: LayerNorm per patch, each block's m * m patches as one row, two linear layers.
    Tensor* h = reshape(g, layer_norm(g, x, merge_ln_.w, merge_ln_.b, eps_), {E * m * m, N / (m * m)});
    h = gelu_erf(g, add(g, mul_mat(g, mm0_, h), mm0_b_));
    Tensor* out = add(g, mul_mat(g, mm2_, h), mm2_b_);
    for (Tensor* s : stacked) out = concat(g, out, s);  // along each token's row
    g.mark_output(out);
    return out;
}

}  // namespace ls
