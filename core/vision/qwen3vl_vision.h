// Qwen3.5's and Qwen3-VL's vision side (projector type "qwen3vl_merger", llama.cpp's name):
// images at their own resolution, resized to a multiple of
// patch x merge pixels within a pixel budget (HF's smart_resize, bicubic); a patch embedding
// (the Conv3d over two copies of the image: its two temporal kernels summed), learned
// positions resampled bilinearly to the image's patch grid, pre-norm layers with LayerNorm,
// fused biased QKV, 2D rope (rows on the first half of each head's pairs, columns on the
// second) and a GELU-tanh MLP; then the merger: LayerNorm, each 2 x 2 block of patches
// concatenated, a linear layer, the exact (erf) GELU and a linear layer into the text model's
// width. The patches are ordered block by block, so a block's four are consecutive rows.
// Qwen3-VL's deepstack layers (clip.vision.is_deepstack_layers) each feed a merger of their
// own (v.deepstack.N: the block's row LayerNormed as a whole, fc1, exact GELU, fc2); a token's
// row is then the main merger's output followed by theirs, as llama.cpp lays it out.
#pragma once
#include "core/vision/vision_encoder.h"

namespace ls {

class Qwen3VLVision final : public VisionEncoder {
public:
    std::array<int64_t, 2> token_grid(const image::Rgb8& img) const override;
    Pixels preprocess(const image::Rgb8& img) const override;
    std::string image_text(int64_t n) const override;
    std::string soft_token() const override { return "<|image_pad|>"; }
    bool sees_whole_image() const override { return false; }
    void set_image_tokens(int64_t min_tokens, int64_t max_tokens) override;
    // The size an image is resized to, {height, width} (HF's smart_resize).
    std::array<int, 2> resized(const image::Rgb8& img) const;

private:
    void load_arch() override;
    Tensor* build_image_graph(Graph& g, const Pixels& px) const override;
    struct Norm {
        Tensor *w = nullptr, *b = nullptr;
    };
    struct Layer {
        Norm ln1, ln2;
        Tensor *qkv = nullptr, *qkv_b = nullptr, *out = nullptr, *out_b = nullptr;
        Tensor *up = nullptr, *up_b = nullptr, *down = nullptr, *down_b = nullptr;
    };
    int patch_ = 0, merge_ = 2, n_head_ = 0, grid_side_ = 0;
    int64_t min_pixels_ = 0, max_pixels_ = 0;
    std::array<int64_t, 2> file_pixels_{};  // the file's (or the default) budget
    float eps_ = 1e-6f;
    std::vector<float> patch_w_;  // the two temporal kernels summed: [3 * p * p, n_embd]
    std::vector<float> pos_;      // the learned position table: [grid_side^2][n_embd]
    Tensor* patch_b_ = nullptr;
    std::vector<Layer> layers_;
    Norm merge_ln_;
    Tensor *mm0_ = nullptr, *mm0_b_ = nullptr, *mm2_ = nullptr, *mm2_b_ = nullptr;
    struct Deepstack {  // Qwen3-VL: a merger of a layer's output (v.deepstack.N)
        int64_t layer = 0;
        Norm norm;  // over a block's m * m patches together
        Tensor *fc1 = nullptr, *fc1_b = nullptr, *fc2 = nullptr, *fc2_b = nullptr;
    };
    std::vector<Deepstack> deepstack_;
};

}  // namespace ls
