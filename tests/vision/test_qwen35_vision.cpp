// Qwen3.5's vision tower and M-RoPE image positions against transformers
// (tools/oracle/qwen35v_tiny.py: a tiny Qwen3_5ForConditionalGeneration whose PIL processor,
// vision tower and merger HF ran on the seven test images, and a prompt holding two images).
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
#include "core/vision/qwen3vl_vision.h"
#include "core/vision/vision_encoder.h"
#include "tests/support/golden.h"
#include "tests/support/kv_contract.h"
#include "tests/support/test_util.h"
#include "tests/support/vision_data.h"

using namespace ls;

namespace {

const std::vector<std::string>& kImages = test::kVisionImages;
// The two images of the golden prompt, in order.
const std::vector<std::string> kPromptImages = {"rgb100x37.png", "photo120x90.jpg"};

std::vector<test::ImageRows> read_embd() { return test::read_image_rows("qwen35v_tiny.embd"); }

std::unique_ptr<VisionEncoder> encoder(Backend& be) { return load_vision_encoder(test::test_data("qwen35v_tiny_mmproj.gguf"), be); }

std::string prompt_text() {
    const std::vector<char> t = test::slurp("qwen35v_tiny.prompt");
    return {t.begin(), t.end()};
}

std::vector<image::Rgb8> prompt_images(size_t from = 0) {
    std::vector<image::Rgb8> v;
    for (size_t i = from; i < kPromptImages.size(); ++i) v.push_back(image::load_file(test::test_data("vision/" + kPromptImages[i])));
    return v;
}

}  // namespace

TEST_CASE("qwen3.5 vision: preprocessing equals HF's PIL processor (smart_resize, bicubic, normalize) on seven images", "[vision][image]") {
    auto cpu = test::make_backend("cpu");
    auto enc = encoder(*cpu);
    auto* q = dynamic_cast<Qwen3VLVision*>(enc.get());
    REQUIRE(q);
    for (const std::string& name : kImages) {
        INFO(name);
        const std::string stem = name.substr(0, name.find('.'));
        test::Reader r{test::slurp("vision/" + stem + ".qwen35.pixels")};
        const int32_t h = r.i32(), w = r.i32(), gt = r.i32(), gh = r.i32(), gw = r.i32();
        CHECK(gt == 1);
        const image::Rgb8 img = image::load_file(test::test_data("vision/" + name));
        const auto size = q->resized(img);
        REQUIRE(size[0] == h);
        REQUIRE(size[1] == w);
        const std::array<int64_t, 2> grid = enc->token_grid(img);
        CHECK(grid[0] * 2 == gh);
        CHECK(grid[1] * 2 == gw);
        const std::vector<float> want = r.f32(size_t(3) * size_t(h) * size_t(w));
        const VisionEncoder::Pixels px = enc->preprocess(img);
        REQUIRE(px.chw.size() == want.size());
        CHECK(std::memcmp(px.chw.data(), want.data(), want.size() * 4) == 0);
    }
}

TEST_CASE("qwen3.5 vision: image embeddings match transformers on every backend, the same bits everywhere", "[vision][tiny]") {
    test::check_image_rows(encoder, "qwen3vl_merger", kPromptImages, read_embd());
}

TEST_CASE("qwen3.5 vision: a prompt with two images matches transformers (M-RoPE positions), whole, in ubatches and beside another, "
          "on every backend",
          "[vision][tiny]") {
    const test::Golden g0 = test::read_golden("qwen35v_tiny"), g1 = test::read_golden("qwen35v_tiny_img1");
    std::vector<float> first;
    for (const std::string& bk : test::all_backend_names()) {
        INFO("backend " << bk);
        test::LoadedModel l = test::load_tiny(bk, "qwen35v");
        auto enc = encoder(*l.be);
        enc->check_text_model(*l.model);
        auto tok = std::make_unique<Tokenizer>(Tokenizer::from_gguf(l.model->gguf()));
        const Batch all = test::check_image_prompt(l, *enc, *tok, prompt_text(), prompt_images(), g0, 1e-4f, 7, first);
        // Beside another sequence holding the second image alone: each the same bits as alone.
        const std::vector<image::Rgb8> imgs1 = prompt_images(1);
        std::string text1 = prompt_text();
        const ImagePrompt p1 = [&] {
            // qwen35v_tiny_img1's prompt: the golden prompt without its first image block.
            const std::string m = kMediaMarker;
            text1.erase(text1.find(m), m.size());
            return layout_image_prompt(*tok, *enc, text1, imgs1, false);
        }();
        REQUIRE(p1.ids.size() == size_t(g1.n));
        Batch b1 = image_prompt_batch(p1, *enc, imgs1, 1, 0, p1.ids.size(), false);
        std::fill(b1.logits.begin(), b1.logits.end(), 1);
        const std::vector<float> alone1 = test::new_session(l, 256, 64, DType::F32, 2)->decode(b1);
        CHECK(test::compare_golden(alone1, g1).worst <= 1e-4);
        Batch both = all;
        for (size_t i = 0; i < b1.size(); ++i) {
            if (!b1.embd_idx.empty() && b1.embd_idx[i] >= 0)
                both.add_row(&b1.embd[size_t(b1.embd_idx[i]) * size_t(l.model->hparams().n_embd)], l.model->hparams().n_embd, b1.tokens[i], 1,
                             b1.pos[i], -1, true, b1.grid[2 * i], b1.grid[2 * i + 1]);
            else both.add(b1.tokens[i], 1, b1.pos[i], true);
        }
        const std::vector<float> mixed = test::new_session(l, 256, 64, DType::F32, 2)->decode(both);
        const size_t V = size_t(g0.n_vocab);
        REQUIRE(mixed.size() == (size_t(g0.n) + size_t(g1.n)) * V);
        CHECK(std::memcmp(mixed.data(), first.data(), first.size() * 4) == 0);
        CHECK(std::memcmp(mixed.data() + first.size(), alone1.data(), alone1.size() * 4) == 0);
    }
}

TEST_CASE("qwen3.5 vision: the next turn reuses the encoded images and equals a fresh evaluation, and text after images continues M-RoPE",
          "[vision]") {
    const test::Golden g0 = test::read_golden("qwen35v_tiny");
    test::LoadedModel l = test::load_tiny("cpu", "qwen35v");
    auto enc = encoder(*l.be);
    auto tok = std::make_unique<Tokenizer>(Tokenizer::from_gguf(l.model->gguf()));
    const std::vector<image::Rgb8> imgs = prompt_images();
    const std::string text = prompt_text();
    const ImagePrompt p = layout_image_prompt(*tok, *enc, text, imgs, false);
    auto s = test::new_session(l, 256, 64, DType::F32);
    ImageCounts c;
    const int64_t kept = evaluate_image_prefix(*s, 0, p, *enc, imgs, &c);
    CHECK(kept == 0);
    CHECK(c.encoded == 2);
    // The rest of the prompt as text: its last logits are the golden's.
    std::vector<int32_t> rest(p.ids.begin() + s->seq_len(0), p.ids.end());
    std::vector<float> last = s->eval(rest);
    float worst = 0;
    for (int32_t v = 0; v < g0.n_vocab; ++v)
        worst = std::max(worst, std::fabs(last[size_t(v)] - g0.logits[size_t(g0.n - 1) * size_t(g0.n_vocab) + size_t(v)]));
    CHECK(worst < 1e-4f);
    s->checkpoint(0);
    // A second turn: the transcript so far plus more text. Its images are not encoded again, and
    // its logits equal a fresh session's over the whole of it.
    const std::vector<int32_t> more = tok->encode("<|im_end|>\n<|im_start|>user\nand then<|im_end|>\n", false, true);
    test::check_next_turn(l, *s, *enc, p, imgs, more);
    s->checkpoint(0);  // (as generate() takes one after each prompt: now past turn 2)
    // Another turn that shares the images but leaves the transcript before the recurrent
    // checkpoint: the state cannot go back there, so the images are encoded again, never read
    // as text (their tags are no tokens), and the logits are a fresh evaluation's.
    const std::vector<int32_t> other = tok->encode("<|im_end|>\n<|im_start|>user\nno", false, true);
    ImagePrompt p3 = p;
    p3.ids.insert(p3.ids.end(), other.begin(), other.end());
    ImageCounts c3;
    evaluate_image_prefix(*s, 0, p3, *enc, imgs, &c3);
    CHECK(c3.encoded == 2);
    const int64_t keep3 = s->reuse_prefix(0, p3.ids);
    CHECK(keep3 >= int64_t(p.spans.back().first + size_t(p.spans.back().n)));
    const std::vector<float> turn3 = s->eval(std::vector<int32_t>(p3.ids.begin() + keep3, p3.ids.end()));
    const std::vector<float> want3 = test::new_session(l, 256, 64, DType::F32)->decode(image_prompt_batch(p3, *enc, imgs, 0, 0, p3.ids.size(), true));
    REQUIRE(turn3.size() == want3.size());
    CHECK(std::memcmp(turn3.data(), want3.data(), want3.size() * 4) == 0);
}

TEST_CASE("qwen3.5 vision: a projector that is not the model's pair and a hostile aspect ratio are refused, and the token budget moves the size",
          "[vision]") {
    auto cpu = test::make_backend("cpu");
    auto enc = encoder(*cpu);
    CHECK_THROWS_WITH(enc->check_text_model(*load_model(test::test_data("gemma3v_tiny.gguf"), *cpu)),
                      Catch::Contains("not a pair") && Catch::Contains("qwen35"));
    auto genc = load_vision_encoder(test::test_data("gemma3v_tiny_mmproj.gguf"), *cpu);
    CHECK_THROWS_WITH(genc->check_text_model(*load_model(test::test_data("qwen35v_tiny.gguf"), *cpu)),
                      Catch::Contains("not a pair") && Catch::Contains("gemma3"));
    image::Rgb8 thin;
    thin.width = 402, thin.height = 2;
    thin.px.assign(size_t(402 * 2 * 3), 128);
    CHECK_THROWS_WITH(enc->n_tokens(thin), Catch::Contains("aspect ratio"));
    // --image-min-tokens / --image-max-tokens move smart_resize's budget (16 x 16 pixels a token).
    const image::Rgb8 photo = image::load_file(test::test_data("vision/photo120x90.jpg"));
    CHECK(enc->n_tokens(photo) == 15);  // the file's budget: 4800 pixels
    enc->set_image_tokens(0, 100);
    CHECK(enc->token_grid(photo) == std::array<int64_t, 2>{6, 8});  // 90 x 120 rounded to 16s (7.5 to 8: half to even)
    enc->set_image_tokens(0, 4);
    CHECK(enc->n_tokens(photo) == 2);
    enc->set_image_tokens(200, 300);
    CHECK(enc->n_tokens(photo) >= 200);
    CHECK(enc->n_tokens(photo) <= 300);
    CHECK_THROWS_WITH(enc->set_image_tokens(200, 0), Catch::Contains("at least 200 and at most 18"));  // the file's 4800 pixels
}
