// The vision oracles' data files (tools/oracle/qwen35v_tiny.py, gemma4v_tiny.py): little-endian
// int32 headers and float32 rows, read whole.
#pragma once
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <fstream>
#include <functional>
#include <memory>
#include <iterator>
#include <string>
#include <vector>

#include "core/image/image.h"
#include "core/text/tokenizer.h"
#include "core/vision/image_prompt.h"
#include "core/vision/vision_encoder.h"
#include "tests/support/golden.h"
#include "tests/support/kv_contract.h"
#include "tests/support/test_util.h"

namespace ls::test {

// The seven test images both oracles ran their processors on (tests/data/vision/).
inline const std::vector<std::string> kVisionImages = {"rgb64.png", "rgb100x37.png", "gray23x31.png", "rgba50.png",
                                                       "photo120x90.jpg", "pal7x5.png", "paltrns9x6.png"};

inline std::vector<char> slurp(const std::string& name) {
    std::ifstream f(test_data(name), std::ios::binary);
    REQUIRE(f.good());
    return {std::istreambuf_iterator<char>(f), {}};
}

struct Reader {
    std::vector<char> b;
    size_t at = 0;
    int32_t i32() {
        REQUIRE(at + 4 <= b.size());
        int32_t v;
        std::memcpy(&v, b.data() + at, 4);
        at += 4;
        return v;
    }
    std::vector<float> f32(size_t n) {
        REQUIRE(at + 4 * n <= b.size());
        std::vector<float> v(n);
        std::memcpy(v.data(), b.data() + at, 4 * n);
        at += 4 * n;
        return v;
    }
};

// <name>.embd: n_images, then per image n_tokens, n_embd, token-grid rows, columns, the rows.
struct ImageRows {
    int32_t n_tokens = 0, n_embd = 0, gh = 0, gw = 0;
    std::vector<float> rows;
};
inline std::vector<ImageRows> read_image_rows(const std::string& file) {
    Reader r{slurp(file)};
    std::vector<ImageRows> out(size_t(r.i32()));
    for (ImageRows& e : out) {
        e.n_tokens = r.i32(), e.n_embd = r.i32(), e.gh = r.i32(), e.gw = r.i32();
        e.rows = r.f32(size_t(e.n_tokens) * size_t(e.n_embd));
    }
    return out;
}

// Each image's rows from the encoder `make` gives on every backend under test: within 1e-4
// of `want` (the oracle's, image by image), with its token grid, and the same bits everywhere.
inline void check_image_rows(const std::function<std::unique_ptr<VisionEncoder>(Backend&)>& make, const std::string& projector,
                             const std::vector<std::string>& images, const std::vector<ImageRows>& want) {
    REQUIRE(want.size() == images.size());
    std::vector<std::vector<float>> first;
    for (const std::string& bk : all_backend_names()) {
        INFO("backend " << bk);
        auto be = make_backend(bk);
        auto enc = make(*be);
        CHECK(enc->projector() == projector);
        for (size_t i = 0; i < want.size(); ++i) {
            INFO(images[i]);
            const image::Rgb8 img = image::load_file(test_data("vision/" + images[i]));
            REQUIRE(enc->n_embd_out() == want[i].n_embd);
            CHECK(enc->token_grid(img) == std::array<int64_t, 2>{want[i].gh, want[i].gw});
            const std::vector<float> got = enc->encode(img);
            REQUIRE(got.size() == want[i].rows.size());
            float worst = 0.f;
            for (size_t j = 0; j < got.size(); ++j) worst = std::max(worst, std::fabs(got[j] - want[i].rows[j]));
            CHECK(worst < 1e-4f);
            if (first.size() <= i) first.push_back(got);
            else CHECK(std::memcmp(first[i].data(), got.data(), got.size() * 4) == 0);
        }
    }
}

// A prompt with images against an oracle's golden on the model `l`: laid out with `enc` and `tok`
// (its tokens the golden's, the encoder's soft token where an image goes), evaluated whole and in
// ubatches of `small_ubatch`, each within `tol` of the golden with no argmax flip and the same
// bits as `first` (the first evaluation's logits, kept there across calls and backends).
// Returns the whole prompt's batch, every token's logits wanted.
inline Batch check_image_prompt(const LoadedModel& l, const VisionEncoder& enc, const Tokenizer& tok, const std::string& text,
                                const std::vector<image::Rgb8>& imgs, const Golden& gold, float tol, int64_t small_ubatch,
                                std::vector<float>& first) {
    const ImagePrompt p = layout_image_prompt(tok, enc, text, imgs, false);
    REQUIRE(p.ids.size() == size_t(gold.n));
    REQUIRE(p.spans.size() == imgs.size());
    for (size_t i = 0; i < p.ids.size(); ++i) {
        INFO("token " << i);
        if (p.ids[i] < 0) CHECK(tok.token_to_piece(gold.tokens[i]) == enc.soft_token());
        else CHECK(p.ids[i] == gold.tokens[i]);
    }
    Batch all = image_prompt_batch(p, enc, imgs, 0, 0, p.ids.size(), false);
    std::fill(all.logits.begin(), all.logits.end(), 1);
    for (int64_t ub : {int64_t(512), small_ubatch}) {
        INFO("ubatch " << ub);
        const std::vector<float> got = new_session(l, 256, ub, DType::F32)->decode(all);
        const GoldenDiff d = compare_golden(got, gold);
        CHECK(d.worst <= tol);
        CHECK(d.flipped == 0);
        if (first.empty()) first = got;
        else CHECK(std::memcmp(first.data(), got.data(), got.size() * 4) == 0);
    }
    return all;
}

// The next chat turn after the image prompt `p`, evaluated on `s`'s sequence 0 and checkpointed
// there: the transcript plus `more`. Its images are found in the cache (none encoded again), the
// reuse keeps all of `p`, and the new tokens' logits are a fresh session's over the whole of it,
// bit for bit.
inline void check_next_turn(const LoadedModel& l, Session& s, const VisionEncoder& enc, const ImagePrompt& p,
                            const std::vector<image::Rgb8>& imgs, const std::vector<int32_t>& more) {
    ImagePrompt p2 = p;
    p2.ids.insert(p2.ids.end(), more.begin(), more.end());
    ImageCounts c;
    evaluate_image_prefix(s, 0, p2, enc, imgs, &c);
    CHECK(c.encoded == 0);
    CHECK(c.reused == int64_t(p.spans.size()));
    const int64_t keep = s.reuse_prefix(0, p2.ids);
    CHECK(keep == int64_t(p.ids.size()));
    const std::vector<float> turn = s.eval(std::vector<int32_t>(p2.ids.begin() + keep, p2.ids.end()));
    const std::vector<float> want =
        new_session(l, 256, 64, DType::F32)->decode(image_prompt_batch(p2, enc, imgs, 0, 0, p2.ids.size(), true));
    REQUIRE(turn.size() == want.size());
    CHECK(std::memcmp(turn.data(), want.data(), want.size() * 4) == 0);
}

}  // namespace ls::test
