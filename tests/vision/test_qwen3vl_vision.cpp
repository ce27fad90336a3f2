// Qwen3-VL against transformers (tools/oracle/qwen3vl_tiny.py: a tiny
// Qwen3VLForConditionalGeneration and a Qwen3VLMoeForConditionalGeneration sharing one vision
// tower, whose deepstack mergers feed the text model's first layers): the image rows with
// their deepstack parts, and the logits of a prompt holding two images for the dense (qwen3vl)
// and the MoE (qwen3vlmoe) text model.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>

#include "core/image/image.h"
#include "core/models/registry.h"
#include "core/runtime/session.h"
#include "core/text/tokenizer.h"
#include "core/vision/image_prompt.h"
#include "core/vision/vision_encoder.h"
#include "tests/support/golden.h"
#include "tests/support/kv_contract.h"
#include "tests/support/test_util.h"
#include "tests/support/vision_data.h"

using namespace ls;

namespace {

// The two images of the golden prompt, in order.
const std::vector<std::string> kPromptImages = {"rgb100x37.png", "photo120x90.jpg"};

std::unique_ptr<VisionEncoder> encoder(Backend& be) { return load_vision_encoder(test::test_data("qwen3vl_tiny_mmproj.gguf"), be); }

std::string prompt_text() {
    const std::vector<char> t = test::slurp("qwen3vl_tiny.prompt");
    return {t.begin(), t.end()};
}

std::vector<image::Rgb8> prompt_images() {
    std::vector<image::Rgb8> v;
    for (const std::string& n : kPromptImages) v.push_back(image::load_file(test::test_data("vision/" + n)));
    return v;
}

}  // namespace

TEST_CASE("qwen3-vl vision: image rows with their deepstack parts match transformers on every backend, the same bits everywhere",
          "[vision][tiny]") {
    const std::vector<test::ImageRows> want = test::read_image_rows("qwen3vl_tiny.embd");
    auto cpu = test::make_backend("cpu");
    // The row: the merger's output, then one per deepstack layer (two here).
    REQUIRE(want.at(0).n_embd == 3 * load_model(test::test_data("qwen3vl_tiny.gguf"), *cpu)->hparams().n_embd);
    test::check_image_rows(encoder, "qwen3vl_merger", kPromptImages, want);
}

TEST_CASE("qwen3-vl: a prompt with two images matches transformers (M-RoPE, deepstack), dense and MoE, whole, in ubatches and "
          "beside text, on every backend",
          "[vision][tiny]") {
    for (const std::string kind : {"qwen3vl_tiny", "qwen3vl_tiny_moe"}) {
        INFO(kind);
        const test::Golden g0 = test::read_golden(kind);
        std::vector<float> first;
        for (const std::string& bk : test::all_backend_names()) {
            INFO("backend " << bk);
            test::LoadedModel l;
            l.be = test::make_backend(bk);
            l.model = load_model(test::test_data(kind + ".gguf"), *l.be);
            auto enc = encoder(*l.be);
            enc->check_text_model(*l.model);
            auto tok = std::make_unique<Tokenizer>(Tokenizer::from_gguf(l.model->gguf()));
            const Batch all = test::check_image_prompt(l, *enc, *tok, prompt_text(), prompt_images(), g0, 1e-4f, 7, first);
            // Beside a text sequence: the image sequence's logits the same bits as alone.
            Batch both = all;
            const std::vector<int32_t> text = tok->encode("<|im_start|>user\nhello there<|im_end|>\n", false, true);
            for (size_t i = 0; i < text.size(); ++i) both.add(text[i], 1, int32_t(i), true);
            const std::vector<float> mixed = test::new_session(l, 256, 64, DType::F32, 2)->decode(both);
            REQUIRE(mixed.size() == (size_t(g0.n) + text.size()) * size_t(g0.n_vocab));
            CHECK(std::memcmp(mixed.data(), first.data(), first.size() * 4) == 0);
            if (bk != "reference") continue;
            // The deepstack rows matter: zeroed, the logits leave the golden.
            Batch flat = all;
            const size_t E = size_t(l.model->hparams().n_embd), W = size_t(l.model->hparams().given_width());
            for (size_t r = 0; r < flat.embd.size() / W; ++r) std::fill_n(flat.embd.begin() + ptrdiff_t(r * W + E), W - E, 0.0f);
            const test::GoldenDiff off = test::compare_golden(test::new_session(l, 256, 512, DType::F32)->decode(flat), g0);
            INFO("without deepstack: " << off.worst);
            CHECK(off.worst > 1e-2);
        }
    }
}

TEST_CASE("qwen3-vl: the next turn reuses the encoded images and equals a fresh evaluation, and text alone runs without M-RoPE rows",
          "[vision]") {
    test::LoadedModel l = test::load_tiny("cpu", "qwen3vl");
    auto enc = encoder(*l.be);
    auto tok = std::make_unique<Tokenizer>(Tokenizer::from_gguf(l.model->gguf()));
    const std::vector<image::Rgb8> imgs = prompt_images();
    const ImagePrompt p = layout_image_prompt(*tok, *enc, prompt_text(), imgs, false);
    auto s = test::new_session(l, 256, 64, DType::F32);
    ImageCounts c;
    CHECK(evaluate_image_prefix(*s, 0, p, *enc, imgs, &c) == 0);
    CHECK(c.encoded == 2);
    std::vector<int32_t> rest(p.ids.begin() + s->seq_len(0), p.ids.end());
    s->eval(rest);
    s->checkpoint(0);
    const std::vector<int32_t> more = tok->encode("<|im_end|>\n<|im_start|>user\nand then<|im_end|>\n", false, true);
    test::check_next_turn(l, *s, *enc, p, imgs, more);
    // A text-only prompt (no image rows) evaluates as plain NeoX rope.
    const std::vector<float> t = test::new_session(l, 256, 64, DType::F32)->eval(tok->encode("hello", false, true));
    CHECK(std::isfinite(t.at(0)));
}

TEST_CASE("qwen3-vl: a projector of another width or family is refused, naming both", "[vision]") {
    auto cpu = test::make_backend("cpu");
    auto enc = encoder(*cpu);
    // Qwen3.5's tiny text model: an accepted family, but its rows hold no deepstack part.
    CHECK_THROWS_WITH(enc->check_text_model(*load_model(test::test_data("qwen35v_tiny.gguf"), *cpu)), Catch::Contains("not a pair"));
    CHECK_THROWS_WITH(enc->check_text_model(*load_model(test::test_data("gemma3v_tiny.gguf"), *cpu)),
                      Catch::Contains("not a pair") && Catch::Contains("qwen3vl"));
    auto q35 = load_vision_encoder(test::test_data("qwen35v_tiny_mmproj.gguf"), *cpu);
    CHECK_THROWS_WITH(q35->check_text_model(*load_model(test::test_data("qwen3vl_tiny.gguf"), *cpu)),
                      Catch::Contains("not a pair") && Catch::Contains("deepstack"));
}
