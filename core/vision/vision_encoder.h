// Image encoders read from llama.cpp's projector files (--mmproj: general.architecture "clip",
// clip.* metadata, v.* and mm.* tensors): an image in, the rows a text model reads in place of
// its image tokens out. The graph runs on the backends the weights were placed on, with the
// same ops as the text models, so its bits are the same on every backend.
#pragma once
#include <array>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "core/image/image.h"
#include "core/models/model.h"

namespace ls {

class Scheduler;

class VisionEncoder : public Model {
public:
    ~VisionEncoder() override;
    // clip.projector_type, e.g. "gemma3".
    const std::string& projector() const { return projector_; }
    // The width of the rows encode() gives (the text model's Hparams::given_width() must equal it).
    int64_t n_embd_out() const { return n_out_; }
    // How many rows an image gives (its soft tokens): its token grid's rows times columns.
    int64_t n_tokens(const image::Rgb8& img) const {
        const std::array<int64_t, 2> g = token_grid(img);
        return g[0] * g[1];
    }
    // The grid of an image's tokens, {rows, columns}; its rows come row by row (a model with
    // multi-axis rope places them by it).
    virtual std::array<int64_t, 2> token_grid(const image::Rgb8& img) const = 0;
    // The model's input for an image, as its HF processor makes it: [3][h][w] floats.
    struct Pixels {
        std::vector<float> chw;
        int h = 0, w = 0;
    };
    virtual Pixels preprocess(const image::Rgb8& img) const = 0;
    // n_tokens(img) rows of n_embd_out() floats. The last images encoded are kept (up to
    // kCacheImages of them and kCacheBytes of rows and pixels, least recently used out first):
    // the same pixels again give their rows without a second encode (the server encodes a
    // request's images on its own thread first, so its engine finds them here). Thread-safe:
    // one image is encoded at a time; a lookup does not wait for an encode.
    std::vector<float> encode(const image::Rgb8& img) const;
    static constexpr size_t kCacheImages = 16, kCacheBytes = size_t(256) << 20;
    // How many encode() calls were answered from the kept images.
    int64_t cache_hits() const {
        const std::lock_guard<std::mutex> lock(cache_mu_);
        return cache_hits_;
    }
    // The text an image takes in the prompt, as the model's HF processor expands it, with
    // `n` copies of soft_token() where its rows go (Gemma 3: "\n\n<start_of_image>", the soft
    // tokens, "<end_of_image>\n\n").
    virtual std::string image_text(int64_t n) const = 0;
    virtual std::string soft_token() const = 0;
    // Whether an image's tokens see the whole image in the text model (Gemma 3), or only the
    // tokens before them, as text does (Qwen-VL).
    virtual bool sees_whole_image() const { return true; }
    // llama.cpp's --image-min-tokens / --image-max-tokens: the token budget of an image for
    // encoders that take images at their own resolution (Qwen-VL); 0 keeps the file's (or the
    // processor's) default. Encoders of a fixed size (Gemma 3) ignore it, as llama.cpp does.
    // Throws std::invalid_argument for min > max.
    virtual void set_image_tokens(int64_t min_tokens, int64_t max_tokens) { (void)min_tokens, (void)max_tokens; }
    // Refuses a text model these rows are not for (its architecture, its width), naming both.
    void check_text_model(const Model& text) const;

    // A projector file's encoder does not evaluate text.
    Tensor* build_graph(Graph&, const Ubatch&, KvCache&) const override;

protected:
    // The graph of one preprocessed image; returns [n_embd_out, n_tokens].
    virtual Tensor* build_image_graph(Graph& g, const Pixels& px) const = 0;
    std::string projector_;
    std::vector<std::string> text_archs_;  // the text models' general.architecture values
    std::array<float, 3> mean_{}, std_{};  // the processor's normalization
    // clip.vision.image_mean and image_std into mean_ and std_, checked (3 values, std > 0);
    // errors name `who`.
    void read_mean_std(const std::string& who);
    int64_t n_out_ = 0;

private:
    std::vector<float> encode_uncached(const image::Rgb8& img) const;
    mutable std::mutex sched_mu_;  // one image is encoded at a time
    mutable std::unique_ptr<Scheduler> sched_;
    struct Kept {
        image::Rgb8 img;
        std::vector<float> rows;
    };
    mutable std::mutex cache_mu_;
    mutable std::list<Kept> cache_;  // most recently used first
    mutable size_t cache_bytes_ = 0;
    mutable int64_t cache_hits_ = 0;
};

// Opens a projector file and places its weights on `be`. Throws naming the file and what is
// wrong: not a projector file, no vision encoder, a projector type lockstep does not run.
std::unique_ptr<VisionEncoder> load_vision_encoder(const std::string& path, Backend& be);

}  // namespace ls
