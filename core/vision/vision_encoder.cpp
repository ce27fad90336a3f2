#include "core/vision/vision_encoder.h"

#include <algorithm>
#include <stdexcept>

#include "core/gguf/gguf.h"
#include "core/sched/scheduler.h"
#include "core/vision/gemma4_vision.h"
#include "core/vision/qwen3vl_vision.h"
#include "core/vision/siglip_gemma3.h"

namespace ls {

VisionEncoder::~VisionEncoder() = default;

std::vector<float> VisionEncoder::encode(const image::Rgb8& img) const {
    {
        const std::lock_guard<std::mutex> lock(cache_mu_);
        for (auto it = cache_.begin(); it != cache_.end(); ++it)
            if (it->img.width == img.width && it->img.height == img.height && it->img.px == img.px) {
                cache_.splice(cache_.begin(), cache_, it);  // most recently used first
                ++cache_hits_;
                return it->rows;
            }
    }
    std::vector<float> rows = encode_uncached(img);
    const std::lock_guard<std::mutex> lock(cache_mu_);
    const size_t bytes = rows.size() * sizeof(float) + img.px.size();
    if (bytes <= kCacheBytes) {
        cache_.push_front({img, rows});
        cache_bytes_ += bytes;
        while (cache_bytes_ > kCacheBytes || cache_.size() > kCacheImages) {
            cache_bytes_ -= cache_.back().rows.size() * sizeof(float) + cache_.back().img.px.size();
            cache_.pop_back();
        }
    }
    return rows;
}

std::vector<float> VisionEncoder::encode_uncached(const image::Rgb8& img) const {
    const Pixels px = preprocess(img);
    Graph g;
    Tensor* out = build_image_graph(g, px);
    // One scheduler for every image: its compute memory is kept, not made and page-faulted in
    // again per image (a tenth of an encode's time at 1024 patches).
    const std::lock_guard<std::mutex> lock(sched_mu_);
    if (!sched_) sched_ = std::make_unique<Scheduler>(backends_);
    sched_->run(g);
    std::vector<float> rows(size_t(out->nelements()));
    read_output(*out, rows.data());
    return rows;
}

void VisionEncoder::check_text_model(const Model& text) const {
    std::string archs;
    for (const std::string& a : text_archs_) archs += (archs.empty() ? "" : " or ") + a;
    if (!text_archs_.empty() && std::find(text_archs_.begin(), text_archs_.end(), text.hparams().arch) == text_archs_.end())
        throw std::invalid_argument("the projector (mmproj, " + projector_ + ") is for " + archs + " text models, not " +
                                    text.hparams().arch + ": they are not a pair");
    if (text.hparams().given_width() != n_out_)
        throw std::invalid_argument("the projector (mmproj, " + projector_ + ") gives rows of " + std::to_string(n_out_) +
                                    " values, but the text model (" + text.hparams().arch + ") takes rows of " +
                                    std::to_string(text.hparams().given_width()) + " (n_embd " + std::to_string(text.hparams().n_embd) +
                                    (text.hparams().given_width() != text.hparams().n_embd ? ", with deepstack rows" : "") +
                                    "): they are not a pair");
}

void VisionEncoder::read_mean_std(const std::string& who) {
    for (auto [key, out] : {std::pair{"clip.vision.image_mean", &mean_}, std::pair{"clip.vision.image_std", &std_}}) {
        const std::vector<double> v = file_->get_float_array(key);
        if (v.size() != 3) throw std::runtime_error(who + " projector: " + key + " must hold 3 values");
        for (size_t c = 0; c < 3; ++c) (*out)[c] = float(v[c]);
    }
    for (float s : std_)
        if (!(s > 0.f)) throw std::runtime_error(who + " projector: clip.vision.image_std must be positive");
}

Tensor* VisionEncoder::build_graph(Graph&, const Ubatch&, KvCache&) const {
    throw std::logic_error("a vision encoder (mmproj) evaluates images, not text");
}

std::unique_ptr<VisionEncoder> load_vision_encoder(const std::string& path, Backend& be) {
    auto file = GgufFile::open(path);
    const std::string arch = file->get_string("general.architecture", "");
    if (arch != "clip")
        throw std::runtime_error(path + ": not a projector (mmproj) file: general.architecture is '" + arch + "', not 'clip'");
    if (!file->get_bool("clip.has_vision_encoder", false))
        throw std::runtime_error(path + ": the projector file has no vision encoder (clip.has_vision_encoder)");
    // (files of models with more than one modality name it clip.vision.projector_type: Gemma 4)
    const std::string proj = file->get_string("clip.projector_type", file->get_string("clip.vision.projector_type", ""));
    std::unique_ptr<VisionEncoder> m;
    if (proj == "gemma3") m = std::make_unique<SiglipGemma3>();
    else if (proj == "qwen3vl_merger") m = std::make_unique<Qwen3VLVision>();
    else if (proj == "gemma4v") m = std::make_unique<Gemma4Vision>();
    else throw std::runtime_error(path + ": projector type '" + proj + "' is not supported (supported: gemma3, gemma4v, qwen3vl_merger)");
    try {
        m->attach(std::move(file), be, Model::WeightMemory::Auto);
    } catch (const std::exception& e) {
        throw std::runtime_error(path + ": " + e.what());
    }
    return m;
}

}  // namespace ls
