// Gemma 3's vision side (projector type "gemma3"): a SigLIP encoder (patch embedding, learned
// positions, pre-norm layers with LayerNorm, biased attention over all of an image's patches
// and a GELU-tanh MLP, a final LayerNorm), then the multimodal projector: an average pool of
// k x k patches (k = clip.vision.projector.scale_factor, 4 when absent as in published files:
// 896 / 14 / 4 = 16 per side, 256 tokens), Gemma's RMS norm (mm.soft_emb_norm, stored +1) and
// the input projection into the text model's width.
#pragma once
#include "core/vision/vision_encoder.h"

namespace ls {

class SiglipGemma3 final : public VisionEncoder {
public:
    std::array<int64_t, 2> token_grid(const image::Rgb8&) const override { return {tokens_per_side_, tokens_per_side_}; }
    Pixels preprocess(const image::Rgb8& img) const override;
    std::string image_text(int64_t n) const override;
    std::string soft_token() const override { return "<image_soft_token>"; }

private:
    void load_arch() override;
    Tensor* build_image_graph(Graph& g, const Pixels& px) const override;
    struct Norm {
        Tensor *w = nullptr, *b = nullptr;
    };
    struct Layer {
        Norm ln1, ln2;
        AttnWeights at{};
        Tensor *up = nullptr, *up_b = nullptr, *down = nullptr, *down_b = nullptr;
    };
    int image_size_ = 0, patch_ = 0, n_head_ = 0, kernel_ = 0;
    int64_t tokens_per_side_ = 0, n_patches_side_ = 0;
    float eps_ = 1e-6f;
    Tensor *patch_w_ = nullptr, *patch_b_ = nullptr, *pos_ = nullptr;
    std::vector<Layer> layers_;
    Norm post_ln_;
    Tensor* soft_norm_ = nullptr;
    std::vector<float> proj_t_;  // mm.input_projection transposed: [n_embd (vision), n_out] for mul_mat
    std::vector<std::vector<int32_t>> pool_rows_;  // per (dy, dx): the patch of each pooled token
};

}  // namespace ls
