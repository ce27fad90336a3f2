// Gemma 4's vision side (projector type "gemma4v", written as clip.vision.projector_type):
// images at their own aspect ratio, scaled up or down to fill a token budget (HF's
// get_aspect_ratio_preserving_size, Pillow's bicubic, pixels in [0, 1] then 2x - 1); a patch
// embedding without bias plus learned x and y position rows; pre- and post-norm layers with
// RMS norm, per-head q / k norms (v normed without weight), 2D rope on each half of a head
// (x positions on the first half, y on the second, NeoX pairs within a half, base 100),
// attention with scale 1, a gated GELU-tanh MLP, and every linear layer "clippable" (its
// input and output clamped to the bounds the file gives); then a k x k average pool (k = 3),
// times sqrt(n_embd), standardized ((x - std_bias) * std_scale), an RMS norm and the
// projection into the text model's width.
#pragma once
#include "core/vision/vision_encoder.h"

namespace ls {

class Gemma4Vision final : public VisionEncoder {
public:
    std::array<int64_t, 2> token_grid(const image::Rgb8& img) const override;
    Pixels preprocess(const image::Rgb8& img) const override;
    std::string image_text(int64_t n) const override;
    std::string soft_token() const override { return "<|image|>"; }
    // The token budget (HF's max_soft_tokens, 280 by default); the minimum has no meaning here.
    void set_image_tokens(int64_t min_tokens, int64_t max_tokens) override;
    // The size an image is resized to, {height, width}.
    std::array<int, 2> resized(const image::Rgb8& img) const;

private:
    void load_arch() override;
    Tensor* build_image_graph(Graph& g, const Pixels& px) const override;
    // A linear layer whose input and output are clamped when the file gives bounds.
    struct Linear {
        Tensor* w = nullptr;
        bool clamped = false;
        float in_min = 0, in_max = 0, out_min = 0, out_max = 0;
    };
    Linear linear(const std::string& name, int64_t k, int64_t n);
    static Tensor* apply(Graph& g, const Linear& l, Tensor* x);
    struct Layer {
        Tensor *ln1 = nullptr, *attn_post = nullptr, *ln2 = nullptr, *ffn_post = nullptr, *q_norm = nullptr, *k_norm = nullptr;
        Linear q, k, v, o, gate, up, down;
    };
    int patch_ = 0, n_head_ = 0, kernel_ = 3;
    int64_t pos_size_ = 0, budget_ = 280;
    float eps_ = 1e-6f;
    Tensor* patch_w_ = nullptr;
    std::vector<float> pos_;  // [2][pos_size][n_embd]: x rows, then y rows
    std::vector<Layer> layers_;
    std::vector<float> neg_std_bias_;  // -std_bias (x - b as x + (-b), exactly)
    Tensor* std_scale_ = nullptr;
    Tensor* proj_ = nullptr;
};

}  // namespace ls
