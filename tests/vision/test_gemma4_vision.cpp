// Gemma 4's vision tower against transformers (tools/oracle/gemma4v_tiny.py: a tiny
// Gemma4ForConditionalGeneration whose PIL processor, vision tower, pooler and embedder HF ran on
// the seven test images).
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <fstream>
#include <iterator>

#include "core/image/image.h"
#include "core/models/registry.h"
#include "core/runtime/session.h"
#include "core/text/tokenizer.h"
#include "core/vision/image_prompt.h"
#include "core/vision/gemma4_vision.h"
#include "core/vision/vision_encoder.h"
#include "tests/support/golden.h"
#include "tests/support/kv_contract.h"
#include "tests/support/test_util.h"
#include "tests/support/vision_data.h"

using namespace ls;

namespace {

const std::vector<std::string>& kImages = test::kVisionImages;
const std::vector<std::string> kEmbdImages = {"rgb100x37.png", "photo120x90.jpg"};

std::vector<test::ImageRows> read_embd() { return test::read_image_rows("gemma4v_tiny.embd"); }

std::unique_ptr<VisionEncoder> encoder(Backend& be) {
    auto e = load_vision_encoder(test::test_data("gemma4v_tiny_mmproj.gguf"), be);
    e->set_image_tokens(0, 70);  // the oracle's processor budget (max_soft_tokens 70)
    return e;
}

}  // namespace

TEST_CASE("gemma4 vision: preprocessing equals HF's PIL processor (the budget's size, bicubic, rescale) on seven images", "[vision][image]") {
    auto cpu = test::make_backend("cpu");
    auto enc = encoder(*cpu);
    auto* g4 = dynamic_cast<Gemma4Vision*>(enc.get());
    REQUIRE(g4);
    for (const std::string& name : kImages) {
        INFO(name);
        const std::string stem = name.substr(0, name.find('.'));
        test::Reader r{test::slurp("vision/" + stem + ".gemma4.pixels")};
        const int32_t h = r.i32(), w = r.i32(), ph = r.i32(), pw = r.i32(), n_tokens = r.i32();
        r.i32();  // max_patches
        const image::Rgb8 img = image::load_file(test::test_data("vision/" + name));
        const auto size = g4->resized(img);
        REQUIRE(size[0] == h);
        REQUIRE(size[1] == w);
        CHECK(enc->token_grid(img) == std::array<int64_t, 2>{ph / 3, pw / 3});
        CHECK(enc->n_tokens(img) == n_tokens);
        REQUIRE(r.at + size_t(h) * size_t(w) * 3 <= r.b.size());
        const auto* bytes = reinterpret_cast<const uint8_t*>(r.b.data() + r.at);
        const VisionEncoder::Pixels px = enc->preprocess(img);
        REQUIRE(px.chw.size() == size_t(3) * size_t(h) * size_t(w));
        int64_t differ = 0;
        for (int64_t c = 0; c < 3; ++c)
            for (int64_t i = 0; i < int64_t(h) * w; ++i) {
                const float want = float(double(bytes[i * 3 + c]) * (1.0 / 255.0));
                differ += std::memcmp(&px.chw[size_t(c * h * w + i)], &want, 4) != 0;
            }
        CHECK(differ == 0);
    }
}

TEST_CASE("gemma4 vision: image embeddings match transformers on every backend, the same bits everywhere", "[vision][tiny]") {
    test::check_image_rows(encoder, "gemma4v", kEmbdImages, read_embd());
}

// The prompt with both images, evaluated whole, in ubatches that never cut an image, and beside
// another sequence. Two text models: one without per-layer embeddings (26B / 31B-like: in its
// sliding layers an image's tokens see the whole image) and one with them (E2B / E4B-like:
// image tokens causal). The golden's float32 noise is about 1e-4 (HF in float64 is 1e-4 from it),
// hence 5e-4.
TEST_CASE("gemma4 vision: a prompt with two images matches transformers for both attention kinds, whole, in ubatches and beside "
          "another, on every backend",
          "[vision][tiny]") {
    for (const std::string variant : {"gemma4v_tiny", "gemma4v_tiny_ple"}) {
        INFO(variant);
        const test::Golden gold = test::read_golden(variant);
        std::vector<float> first;
        for (const std::string& bk : test::all_backend_names()) {
            INFO("backend " << bk);
            test::LoadedModel l;
            l.be = test::make_backend(bk);
            l.model = load_model(test::test_data(variant + ".gguf"), *l.be);
            auto enc = encoder(*l.be);
            enc->check_text_model(*l.model);
            auto tok = std::make_unique<Tokenizer>(Tokenizer::from_gguf(l.model->gguf()));
            std::vector<image::Rgb8> imgs;
            for (const std::string& n : kEmbdImages) imgs.push_back(image::load_file(test::test_data("vision/" + n)));
            const std::vector<char> pt = test::slurp("gemma4v_tiny.prompt");
            const Batch all = test::check_image_prompt(l, *enc, *tok, std::string(pt.begin(), pt.end()), imgs, gold, 5e-4f, 70, first);
            // Beside a text-only sequence: the same bits.
            Batch both = all;
            for (int32_t i = 0; i < 9; ++i) both.add(all.tokens[size_t(i)] < 0 ? 2 : all.tokens[size_t(i)], 1, i, true);
            const std::vector<float> mixed = test::new_session(l, 256, 512, DType::F32, 2)->decode(both);
            REQUIRE(mixed.size() >= first.size());
            CHECK(std::memcmp(mixed.data(), first.data(), first.size() * 4) == 0);
        }
    }
}
