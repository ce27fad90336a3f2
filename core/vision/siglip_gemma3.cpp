#include "core/vision/siglip_gemma3.h"

#include <cmath>
#include <stdexcept>

#include "core/image/pixels.h"
#include "core/image/resize.h"
#include "core/ir/ops.h"

namespace ls {

void SiglipGemma3::load_arch() {
    const GgufFile& f = *file_;
    projector_ = "gemma3";
    text_archs_ = {"gemma3"};
    hp_.arch = "clip";
    auto bad = [](const std::string& what) { throw std::runtime_error("gemma3 projector: " + what); };
    const int64_t E = f.get_int("clip.vision.embedding_length"), F = f.get_int("clip.vision.feed_forward_length");
    const int64_t L = f.get_int("clip.vision.block_count"), H = f.get_int("clip.vision.attention.head_count");
    const int64_t S = f.get_int("clip.vision.image_size"), P = f.get_int("clip.vision.patch_size");
    const int64_t k = f.get_int("clip.vision.projector.scale_factor", 4);
    eps_ = float(f.get_float("clip.vision.attention.layer_norm_epsilon", 1e-6));
    constexpr int64_t kMax = int64_t(1) << 20;
    for (int64_t v : {E, F, L, H, S, P, k})
        if (v <= 0 || v > kMax) bad("a hyperparameter of " + std::to_string(v) + " is out of range (broken metadata)");
    if (E % H || S % P || (S / P) % k || S > 8192) bad("inconsistent sizes (embedding_length a multiple of head_count, image_size of patch_size, patches per side of scale_factor)");
    if (!(eps_ > 0.f) || !std::isfinite(eps_)) bad("attention.layer_norm_epsilon must be a positive number");
    if (!f.get_bool("clip.use_gelu", true)) bad("clip.use_gelu is false (GELU-quick): not Gemma 3's SigLIP");
    image_size_ = int(S);
    patch_ = int(P);
    n_head_ = int(H);
    kernel_ = int(k);
    n_patches_side_ = S / P;
    tokens_per_side_ = n_patches_side_ / k;
    read_mean_std("gemma3");
    hp_.n_embd = E;
    hp_.n_layer = L;
    hp_.n_ff = F;
    const int64_t N = n_patches_side_ * n_patches_side_, hd = E / H;
    hp_.attn_scale = 1.0f / std::sqrt(float(hd));
    patch_w_ = weight("v.patch_embd.weight", {P, P, 3, E});
    patch_b_ = norm_weight("v.patch_embd.bias", E);
    pos_ = weight("v.position_embd.weight", {E, N});
    for (int64_t il = 0; il < L; ++il) {
        const std::string p = "v.blk." + std::to_string(il) + ".";
        Layer l;
        l.ln1 = {norm_weight(p + "ln1.weight", E), norm_weight(p + "ln1.bias", E)};
        l.ln2 = {norm_weight(p + "ln2.weight", E), norm_weight(p + "ln2.bias", E)};
        l.at = {matmul_weight(p + "attn_q.weight", E, E), matmul_weight(p + "attn_k.weight", E, E),
                matmul_weight(p + "attn_v.weight", E, E), matmul_weight(p + "attn_out.weight", E, E)};
        l.at.bq = norm_weight(p + "attn_q.bias", E);
        l.at.bk = norm_weight(p + "attn_k.bias", E);
        l.at.bv = norm_weight(p + "attn_v.bias", E);
        l.at.bo = norm_weight(p + "attn_out.bias", E);
        l.up = matmul_weight(p + "ffn_up.weight", E, F);
        l.up_b = norm_weight(p + "ffn_up.bias", F);
        l.down = matmul_weight(p + "ffn_down.weight", F, E);
        l.down_b = norm_weight(p + "ffn_down.bias", E);
        layers_.push_back(l);
    }
    post_ln_ = {norm_weight("v.post_ln.weight", E), norm_weight("v.post_ln.bias", E)};
    soft_norm_ = norm_weight("mm.soft_emb_norm.weight", E);
    // mm.input_projection is stored as HF's [vision, text] matrix (ne: text width first), the
    // transpose of what mul_mat takes: read on the host (F32 or F16, as the converter writes
    // it) and given to the graph transposed.
    const GgufTensorInfo* pi = f.find_tensor("mm.input_projection.weight");
    if (!pi) bad("missing tensor 'mm.input_projection.weight'");
    n_out_ = pi->ne[0];
    const HostLinear proj = host_linear("mm.input_projection.weight", n_out_, E);
    proj_t_.resize(size_t(E) * size_t(n_out_));
    for (int64_t i = 0; i < E; ++i)
        for (int64_t j = 0; j < n_out_; ++j) proj_t_[size_t(j * E + i)] = proj.w[size_t(i * n_out_ + j)];
    // The average pool: pooled token (ty, tx) is the mean of patches (k ty + dy, k tx + dx);
    // one row list per (dy, dx), gathered and summed in that order.
    const int64_t T = tokens_per_side_;
    for (int dy = 0; dy < kernel_; ++dy)
        for (int dx = 0; dx < kernel_; ++dx) {
            std::vector<int32_t> rows;
            for (int64_t ty = 0; ty < T; ++ty)
                for (int64_t tx = 0; tx < T; ++tx) rows.push_back(int32_t((k * ty + dy) * n_patches_side_ + k * tx + dx));
            pool_rows_.push_back(std::move(rows));
        }
}

VisionEncoder::Pixels SiglipGemma3::preprocess(const image::Rgb8& img) const {
    // Gemma3ImageProcessor: resize to image_size square with PIL's bilinear filter (aspect
    // not kept), rescale by 1/255, normalize with the file's mean and std.
    const image::Rgb8 r = image::resize(img, image_size_, image_size_, image::Filter::Bilinear);
    return {image::normalize(r, mean_, std_), image_size_, image_size_};
}

std::string SiglipGemma3::image_text(int64_t n) const {
    // processing_gemma3.py's expansion of each image's place (llama.cpp's mtmd leaves out the
    // two blank lines; the model was trained with the processor's).
    std::string s = "\n\n<start_of_image>";
    for (int64_t i = 0; i < n; ++i) s += soft_token();
    return s + "<end_of_image>\n\n";
}

Tensor* SiglipGemma3::build_image_graph(Graph& g, const Pixels& px) const {
    using namespace ops;
    const int64_t E = hp_.n_embd, N = n_patches_side_ * n_patches_side_, P = patch_, hd = E / n_head_;
    if (px.h != image_size_ || px.w != image_size_) throw std::logic_error("gemma3 projector: pixels of the wrong size");
    // Patch embedding as a matrix product over the unfolded patches (the conv's kernel order).
    const std::vector<float> patches = image::unfold_patches(px.chw, px.h, px.w, patch_);
    Tensor* pin = g.input(DType::F32, {3 * P * P, N}, patches.data(), "patches");
    Tensor* x = add(g, mul_mat(g, reshape(g, patch_w_, {3 * P * P, E}), pin), patch_b_);
    x = add(g, x, pos_);
    // Every patch sees every patch: one sequence whose keys are the rows of k and v themselves
    // (ring of N rows, each query's last key N - 1).
    std::vector<int32_t> last(size_t(N), int32_t(N - 1)), seq(size_t(N), 0);
    Tensor* pos_in = g.input(DType::I32, {N}, last.data(), "last_key");
    Tensor* seq_in = g.input(DType::I32, {N}, seq.data(), "seq");
    const AttentionParams ap{0, int32_t(N), n_head_, hp_.attn_scale, 0.f};
    for (const Layer& l : layers_) {
        Tensor* h = layer_norm(g, x, l.ln1.w, l.ln1.b, eps_);
        Tensor* q = add(g, mul_mat(g, l.at.wq, h), l.at.bq);
        Tensor* k = add(g, mul_mat(g, l.at.wk, h), l.at.bk);
        Tensor* v = add(g, mul_mat(g, l.at.wv, h), l.at.bv);
        Tensor* a = attention(g, reshape(g, q, {hd, n_head_, N}), k, v, pos_in, seq_in, ap);
        x = add(g, x, add(g, mul_mat(g, l.at.wo, reshape(g, a, {E, N})), l.at.bo));
        h = layer_norm(g, x, l.ln2.w, l.ln2.b, eps_);
        Tensor* f = gelu(g, add(g, mul_mat(g, l.up, h), l.up_b));
        x = add(g, x, add(g, mul_mat(g, l.down, f), l.down_b));
    }
    x = layer_norm(g, x, post_ln_.w, post_ln_.b, eps_);
    // Average pool: the k*k gathered patch rows summed in order, then scaled by 1 / k^2.
    const int64_t T = tokens_per_side_ * tokens_per_side_;
    Tensor* pooled = nullptr;
    for (size_t i = 0; i < pool_rows_.size(); ++i) {
        Tensor* rows = get_rows(g, x, g.input(DType::I32, {T}, pool_rows_[i].data(), "pool_rows"));
        pooled = pooled ? add(g, pooled, rows) : rows;
    }
    pooled = scale(g, pooled, 1.0f / float(kernel_ * kernel_));
    pooled = rms_norm(g, pooled, soft_norm_, eps_);
    Tensor* proj = g.input(DType::F32, {E, n_out_}, proj_t_.data(), "input_projection");
    Tensor* out = mul_mat(g, proj, pooled);
    g.mark_output(out);
    return out;
}

}  // namespace ls
