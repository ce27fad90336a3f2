// Image encoders from projector files against transformers (tools/oracle/vision_tiny.py: a
// tiny Gemma 3 whose SigLIP tower and projector HF ran on seven test images).
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <fstream>
#include <iterator>

#include "core/image/image.h"
#include "core/models/registry.h"
#include "core/runtime/session.h"
#include "tests/support/golden.h"
#include "tests/support/kv_contract.h"
#include "core/vision/image_prompt.h"
#include "core/vision/vision_encoder.h"
#include "tests/support/test_util.h"

using namespace ls;

namespace {

const std::vector<std::string> kImages = {"rgb64.png", "rgb100x37.png", "gray23x31.png", "rgba50.png",
                                          "photo120x90.jpg", "pal7x5.png", "paltrns9x6.png"};

// gemma3v_tiny.embd: n_images, n_tokens, n_embd, then the rows of each image.
struct Embd {
    int n_images = 0, n_tokens = 0, n_embd = 0;
    std::vector<float> v;
    const float* image(int i) const { return v.data() + size_t(i) * size_t(n_tokens) * size_t(n_embd); }
};
Embd read_embd() {
    std::ifstream f(test::test_data("gemma3v_tiny.embd"), std::ios::binary);
    REQUIRE(f);
    Embd e;
    f.read(reinterpret_cast<char*>(&e.n_images), 4);
    f.read(reinterpret_cast<char*>(&e.n_tokens), 4);
    f.read(reinterpret_cast<char*>(&e.n_embd), 4);
    e.v.resize(size_t(e.n_images) * size_t(e.n_tokens) * size_t(e.n_embd));
    f.read(reinterpret_cast<char*>(e.v.data()), std::streamsize(e.v.size() * 4));
    REQUIRE(f);
    return e;
}

}  // namespace

TEST_CASE("gemma3 vision: image embeddings match transformers on every backend, the same bits everywhere", "[vision][tiny]") {
    const Embd want = read_embd();
    REQUIRE(want.n_images == int(kImages.size()));
    std::vector<std::vector<float>> first;  // the first backend's rows, per image
    for (const std::string& bk : test::all_backend_names()) {
        INFO("backend " << bk);
        auto be = test::make_backend(bk);
        auto enc = load_vision_encoder(test::test_data("gemma3v_tiny_mmproj.gguf"), *be);
        CHECK(enc->projector() == "gemma3");
        REQUIRE(enc->n_embd_out() == want.n_embd);
        for (size_t i = 0; i < kImages.size(); ++i) {
            INFO(kImages[i]);
            const image::Rgb8 img = image::load_file(test::test_data("vision/" + kImages[i]));
            REQUIRE(enc->n_tokens(img) == want.n_tokens);
            const std::vector<float> got = enc->encode(img);
            REQUIRE(got.size() == size_t(want.n_tokens) * size_t(want.n_embd));
            float worst = 0.f;
            for (size_t j = 0; j < got.size(); ++j) worst = std::max(worst, std::fabs(got[j] - want.image(int(i))[j]));
            CHECK(worst < 1e-4f);
            if (first.size() <= i) first.push_back(got);
            else CHECK(std::memcmp(first[i].data(), got.data(), got.size() * 4) == 0);
        }
    }
}

TEST_CASE("vision encoders keep the last images' rows: the same pixels again are not encoded again, and give the same bits",
          "[vision]") {
    auto cpu = test::make_backend("cpu");
    auto enc = load_vision_encoder(test::test_data("gemma3v_tiny_mmproj.gguf"), *cpu);
    const image::Rgb8 img = image::load_file(test::test_data("vision/rgb64.png"));
    const std::vector<float> first = enc->encode(img);
    CHECK(enc->cache_hits() == 0);
    const std::vector<float> again = enc->encode(img);
    CHECK(enc->cache_hits() == 1);
    CHECK(std::memcmp(first.data(), again.data(), first.size() * 4) == 0);
    // One pixel differs: another image. Then enough others to push the first one out: it is
    // encoded afresh (no hit), with the same bits.
    image::Rgb8 other = img;
    other.px[0] ^= 1;
    enc->encode(other);
    CHECK(enc->cache_hits() == 1);
    for (size_t i = 0; i < VisionEncoder::kCacheImages; ++i) {
        other.px[1] = uint8_t(i);
        enc->encode(other);
    }
    const int64_t hits = enc->cache_hits();
    const std::vector<float> later = enc->encode(img);
    CHECK(enc->cache_hits() == hits);
    CHECK(std::memcmp(first.data(), later.data(), first.size() * 4) == 0);
}

TEST_CASE("vision encoders: a file that is no projector, or the wrong one, is refused by name", "[vision]") {
    auto cpu = test::make_backend("cpu");
    CHECK_THROWS_WITH(load_vision_encoder(test::test_data("gemma3v_tiny.gguf"), *cpu),
                      Catch::Contains("not a projector (mmproj) file") && Catch::Contains("gemma3"));
    auto enc = load_vision_encoder(test::test_data("gemma3v_tiny_mmproj.gguf"), *cpu);
    CHECK_NOTHROW(enc->check_text_model(*load_model(test::test_data("gemma3v_tiny.gguf"), *cpu)));
    CHECK_THROWS_WITH(enc->check_text_model(*load_model(test::test_data("qwen3_tiny.gguf"), *cpu)),
                      Catch::Contains("not a pair") && Catch::Contains("qwen3"));
}

namespace {

// The golden prompt as a batch: the <image_soft_token> positions take image `img`'s rows
// (from `rows`, 16 of 64 each), seeing the whole image; the other tokens their own rows.
constexpr int32_t kImageToken = 383;
Batch image_batch(const test::Golden& gold, const float* rows, int64_t n_embd, int32_t seq, int32_t image_tag) {
    int32_t first = -1, last = -1;
    for (int32_t i = 0; i < gold.n; ++i)
        if (gold.tokens[size_t(i)] == kImageToken) last = i, first = first < 0 ? i : first;
    Batch b;
    for (int32_t i = 0; i < gold.n; ++i) {
        if (gold.tokens[size_t(i)] == kImageToken) b.add_row(rows + size_t(i - first) * size_t(n_embd), n_embd, image_tag, seq, i, last, true);
        else b.add(gold.tokens[size_t(i)], seq, i, true);
    }
    return b;
}

}  // namespace

TEST_CASE("gemma3 vision: a prompt with an image matches transformers, whole and in ubatches, alone and beside another, on every backend",
          "[vision][tiny]") {
    const Embd e = read_embd();
    const test::Golden g0 = test::read_golden("gemma3v_tiny"), g1 = test::read_golden("gemma3v_tiny_img1");
    REQUIRE(std::count(g0.tokens.begin(), g0.tokens.end(), kImageToken) == e.n_tokens);
    std::vector<float> first;
    for (const std::string& bk : test::all_backend_names()) {
        test::LoadedModel l = test::load_tiny(bk, "gemma3v");
        auto enc = load_vision_encoder(test::test_data("gemma3v_tiny_mmproj.gguf"), *l.be);
        enc->check_text_model(*l.model);
        for (int64_t ub : {int64_t(64), int64_t(16)}) {
            INFO("backend " << bk << ", ubatch " << ub);
            // The oracle's image rows, then the encoder's own: both within 1e-4 of transformers.
            auto s = test::new_session(l, 128, ub, DType::F32);
            const std::vector<float> got = s->decode(image_batch(g0, e.image(0), e.n_embd, 0, -1));
            const test::GoldenDiff d = test::compare_golden(got, g0);
            INFO("largest |logit - transformers| = " << d.worst);
            CHECK(d.worst <= 1e-4);
            CHECK(d.flipped == 0);
            const std::vector<float> rows = enc->encode(image::load_file(test::test_data("vision/rgb64.png")));
            const test::GoldenDiff de = test::compare_golden(test::new_session(l, 128, ub, DType::F32)->decode(image_batch(g0, rows.data(), e.n_embd, 0, -1)), g0);
            INFO("with the encoder's rows: " << de.worst);
            CHECK(de.worst <= 1e-4);
            if (first.empty()) first = got;
            else CHECK(std::memcmp(first.data(), got.data(), got.size() * 4) == 0);
            // Two image prompts in one batch (two sequences): each equals itself alone.
            auto two = test::new_session(l, 128, ub == 16 ? 32 : ub, DType::F32, 2);
            Batch b = image_batch(g0, e.image(0), e.n_embd, 0, -1);
            const Batch b1 = image_batch(g1, e.image(1), e.n_embd, 1, -2);
            for (size_t i = 0; i < b1.size(); ++i) {
                if (b1.embd_idx[i] >= 0) b.add_row(&b1.embd[size_t(b1.embd_idx[i]) * size_t(e.n_embd)], e.n_embd, -2, 1, b1.pos[i], b1.last_key[i], true);
                else b.add(b1.tokens[i], 1, b1.pos[i], true);
            }
            const std::vector<float> both = two->decode(b);
            const size_t half = size_t(g0.n) * size_t(g0.n_vocab);
            REQUIRE(both.size() == 2 * half);
            CHECK(std::memcmp(both.data(), got.data(), half * 4) == 0);
            const std::vector<float> alone1 = test::new_session(l, 128, ub, DType::F32)->decode(image_batch(g1, e.image(1), e.n_embd, 0, -2));
            CHECK(compare_golden(alone1, g1).worst <= 1e-4);
            CHECK(std::memcmp(both.data() + half, alone1.data(), half * 4) == 0);
        }
    }
}

TEST_CASE("gemma3 vision: an image block larger than the ubatch, or cut apart, is refused, and text models take no image rows", "[vision]") {
    const Embd e = read_embd();
    const test::Golden g0 = test::read_golden("gemma3v_tiny");
    test::LoadedModel l = test::load_tiny("cpu", "gemma3v");
    CHECK_THROWS_WITH(test::new_session(l, 128, 8, DType::F32)->decode(image_batch(g0, e.image(0), e.n_embd, 0, -1)),
                      Catch::Contains("larger than the ubatch") && Catch::Contains("-ub"));
    Batch cut = image_batch(g0, e.image(0), e.n_embd, 0, -1);
    cut.last_key[6] = 40;  // past the batch
    CHECK_THROWS_WITH(test::new_session(l, 128, 64, DType::F32)->decode(cut), Catch::Contains("not the rest of its block"));
    test::LoadedModel q = test::load_tiny("cpu", "qwen3");
    CHECK_THROWS_WITH(test::new_session(q, 128, 64, DType::F32)->decode(image_batch(g0, e.image(0), e.n_embd, 0, -1)),
                      Catch::Contains("qwen3 takes no image"));
}

TEST_CASE("gemma3 vision: a prompt's text with an image marker tokenizes as HF's processor expands it, and its last logits match",
          "[vision]") {
    const test::Golden g0 = test::read_golden("gemma3v_tiny");
    test::LoadedModel l = test::load_tiny("cpu", "gemma3v");
    auto enc = load_vision_encoder(test::test_data("gemma3v_tiny_mmproj.gguf"), *l.be);
    auto tok = std::make_unique<Tokenizer>(Tokenizer::from_gguf(l.model->gguf()));
    const image::Rgb8 img = image::load_file(test::test_data("vision/rgb64.png"));
    const std::string text = "<start_of_turn>user\n<__media__>Describe.<end_of_turn>\n<start_of_turn>model\n";
    const auto layout = [&](const std::string& s) { return layout_image_prompt(*tok, *enc, s, {img}, tok->add_bos_default()); };
    const ImagePrompt p = layout(text);
    REQUIRE(p.ids.size() == size_t(g0.n));
    CHECK(p.n_image_tokens == 16);
    for (size_t i = 0; i < p.ids.size(); ++i) {
        INFO("token " << i);
        if (g0.tokens[i] == kImageToken) CHECK(p.ids[i] == image_tag(img));
        else CHECK(p.ids[i] == g0.tokens[i]);
    }
    CHECK(image_tag(img) < 0);
    CHECK(image_tag(img) != image_tag(image::load_file(test::test_data("vision/rgb100x37.png"))));
    const std::vector<float> last = test::new_session(l, 128, 64, DType::F32)->decode(image_prompt_batch(p, *enc, {img}, 0, 0, p.ids.size(), true));
    REQUIRE(last.size() == size_t(g0.n_vocab));
    float worst = 0;
    for (int32_t v = 0; v < g0.n_vocab; ++v)
        worst = std::max(worst, std::fabs(last[size_t(v)] - g0.logits[size_t(g0.n - 1) * size_t(g0.n_vocab) + size_t(v)]));
    CHECK(worst < 1e-4f);
    // The same text without a marker: the image goes first; a marker too many is an error.
    CHECK(layout("Describe.").n_image_tokens == 16);
    CHECK_THROWS_WITH(layout("<__media__><__media__>"), Catch::Contains("2 image markers"));
    CHECK_THROWS_WITH(layout("<image_soft_token> x <__media__>"), Catch::Contains("not one run") || Catch::Contains("of its own"));
}
