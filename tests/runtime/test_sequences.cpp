// Many sequences in one session (issue: sequences and KV memory): batches that mix
// sequences, the scheduler's ubatch split, sequence edits (seq_rm, seq_cp, seq_keep, reset),
// prefix reuse in generate(), and the load-time guards; every backend, on tiny Gemma 3 models.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>

#include "core/runtime/generate.h"
#include "core/runtime/session.h"
#include "core/text/tokenizer.h"
#include "tests/support/logits_util.h"
#include "tests/support/tiny_model.h"

using namespace ls;
using namespace ls::test;

namespace {

constexpr int kWindow = 8;

TinyGemma3Spec seq_spec(int window = kWindow) {
    TinyGemma3Spec s;
    s.n_layer = 7;  // six windowed layers and one global (layer 5)
    s.window = window;
    s.ctx = 256;
    s.seed = 11;
    return s;
}

LoadedModel load(const std::string& backend, int window = kWindow) {
    return load_tiny(backend, "seq_w" + std::to_string(window), seq_spec(window));
}

std::unique_ptr<Session> session(const LoadedModel& l, int64_t n_ctx, int64_t n_ubatch, int n_seq = 1,
                                 DType kv = DType::F16) {
    SessionParams p;
    p.n_ctx = n_ctx;
    p.n_ubatch = n_ubatch;
    p.n_seq = n_seq;
    p.type_k = p.type_v = kv;
    return std::make_unique<Session>(*l.model, *l.be, p);
}

// Token-at-a-time logits of `tokens` in a fresh single-sequence session.
std::vector<float> alone(const LoadedModel& l, const std::vector<int32_t>& tokens, DType kv = DType::F16) {
    return one_by_one(*session(l, 128, 1, 1, kv), tokens);
}

std::vector<float> rows_of(const std::vector<float>& logits, size_t first, size_t n, int64_t nv) {
    return {logits.begin() + first * nv, logits.begin() + (first + n) * nv};
}

}  // namespace

TEST_CASE("sequences: four sequences of different lengths in one ubatch equal each evaluated alone", "[kv][seq]") {
    const std::string bk = GENERATE(from_range(all_backend_names()));
    const DType kv = GENERATE(DType::F16, DType::Q8_0);
    INFO("backend " << bk << ", kv cache " << dtype_name(kv));
    LoadedModel l = load(bk);
    const int32_t nv = int32_t(l.model->hparams().n_vocab);
    // 13 + 3 + 9 + 11 = 36 tokens, one ubatch; three prompts are longer than the window.
    const std::vector<std::vector<int32_t>> prompts = {random_tokens(13, 31, nv), random_tokens(3, 32, nv),
                                                       random_tokens(9, 33, nv), random_tokens(11, 34, nv)};
    auto s = session(l, 64, 40, 4, kv);
    Batch b;
    // Interleaved token by token, so every ubatch row of one sequence sits between others'.
    for (size_t i = 0; i < 13; ++i)
        for (int q = 0; q < 4; ++q)
            if (i < prompts[q].size()) b.add(prompts[q][i], q, int32_t(i), true);
    const std::vector<float> got = s->decode(b);
    REQUIRE(got.size() == b.size() * size_t(nv));
    for (int q = 0; q < 4; ++q) {
        INFO("sequence " << q);
        std::vector<float> mine;
        for (size_t i = 0; i < b.size(); ++i)
            if (b.seq[i] == q) {
                std::vector<float> r = rows_of(got, i, 1, nv);
                mine.insert(mine.end(), r.begin(), r.end());
            }
        REQUIRE_BIT_IDENTICAL(mine, alone(l, prompts[q], kv), nv);
        CHECK(s->seq_len(q) == int64_t(prompts[q].size()));
        CHECK(s->seq_tokens(q) == prompts[q]);
    }
}

TEST_CASE("sequences: a long mixed batch is split into ubatches and only flagged logits come back", "[kv][seq]") {
    const std::string bk = GENERATE(from_range(all_backend_names()));
    INFO("backend " << bk);
    LoadedModel l = load(bk);
    const int32_t nv = int32_t(l.model->hparams().n_vocab);
    const std::vector<std::vector<int32_t>> prompts = {random_tokens(50, 41, nv), random_tokens(7, 42, nv),
                                                       random_tokens(33, 43, nv)};
    auto s = session(l, 64, 6, 3);  // B = 6: windowed rings of 14 rows wrap many times
    Batch b;
    // Sequence by sequence this time (whole prompts one after another), so ubatches straddle
    // sequence boundaries; logits of every third token only.
    std::vector<std::pair<int, size_t>> flagged;
    for (int q = 0; q < 3; ++q)
        for (size_t i = 0; i < prompts[q].size(); ++i) {
            const bool want = (b.size() % 3) == 0;
            if (want) flagged.emplace_back(q, i);
            b.add(prompts[q][i], q, int32_t(i), want);
        }
    const std::vector<float> got = s->decode(b);
    REQUIRE(got.size() == flagged.size() * size_t(nv));
    std::vector<std::vector<float>> want(3);
    for (int q = 0; q < 3; ++q) want[q] = alone(l, prompts[q]);
    std::vector<float> expect;
    for (auto [q, i] : flagged) {
        std::vector<float> r = rows_of(want[q], i, 1, nv);
        expect.insert(expect.end(), r.begin(), r.end());
    }
    REQUIRE_BIT_IDENTICAL(got, expect, nv);
}

TEST_CASE("sequences: ring oracle with W = 16, ubatch 32 and prompts of 32k + 5 tokens", "[kv][seq][ring]") {
    const std::string bk = GENERATE(from_range(all_backend_names()));
    const DType kv = GENERATE(DType::F16, DType::Q8_0, DType::Q4_0);
    INFO("backend " << bk << ", kv cache " << dtype_name(kv));
    LoadedModel l = load(bk, 16);
    const int32_t nv = int32_t(l.model->hparams().n_vocab);
    for (size_t k : {1, 2, 4, 6}) {
        const size_t len = 32 * k + 5;  // the last chunk (5 tokens) is shorter than the window
        INFO("prompt of " << len << " tokens");
        const std::vector<int32_t> prompt = random_tokens(len, uint32_t(500 + k), nv);
        auto chunked = session(l, 256, 32, 1, kv);  // n_ctx 256 > W + B = 48: rows really wrap
        REQUIRE(chunked->kv().ring_rows(0) == 48);
        const std::vector<float> got = chunked->eval(prompt, 0);
        REQUIRE_BIT_IDENTICAL(got, one_by_one(*session(l, 256, 1, 1, kv), prompt), nv);
    }
}

TEST_CASE("sequences: seq_cp forks a sequence, seq_keep and reset drop the others", "[kv][seq]") {
    const std::string bk = GENERATE(from_range(all_backend_names()));
    const DType kv = GENERATE(DType::F16, DType::Q4_0);
    INFO("backend " << bk << ", kv cache " << dtype_name(kv));
    LoadedModel l = load(bk);
    const int32_t nv = int32_t(l.model->hparams().n_vocab);
    const std::vector<int32_t> A = random_tokens(30, 51, nv), X = random_tokens(6, 52, nv), Y = random_tokens(9, 53, nv);
    auto fresh = [&](const std::vector<int32_t>& transcript, size_t from) {
        return session(l, 96, 4, 1, kv)->eval(transcript, int64_t(from));
    };
    auto s = session(l, 96, 4, 3, kv);  // windowed rings of W + B = 12 rows
    s->eval(A, -1, 0);
    s->eval(Y, -1, 2);  // something in slot 2 that the copy must replace

    SECTION("a whole-sequence copy continues like the original") {
        REQUIRE(s->seq_cp(0, 2));
        CHECK(s->seq_len(2) == 30);
        CHECK(s->seq_tokens(2) == A);
        REQUIRE_BIT_IDENTICAL(s->eval(X, 0, 2), fresh(concat(A, X), 30), nv);
        REQUIRE_BIT_IDENTICAL(s->eval(Y, 0, 0), fresh(concat(A, Y), 30), nv);  // the source is untouched
    }
    SECTION("a prefix copy works while the ring holds what the prefix needs, and is refused after") {
        REQUIRE(s->seq_cp(0, 1, 26));  // 30 - 26 <= R - W + 1 = 5
        CHECK(s->seq_len(1) == 26);
        REQUIRE_BIT_IDENTICAL(s->eval(X, 0, 1), fresh(concat(head(A, 26), X), 26), nv);
        REQUIRE_FALSE(s->seq_cp(0, 2, 20));  // key 13 was overwritten by position 25
        CHECK(s->seq_tokens(2) == Y);        // and nothing changed
        REQUIRE_BIT_IDENTICAL(s->eval(X, 0, 2), fresh(concat(Y, X), 9), nv);
    }
    SECTION("seq_keep empties the other slots; a slot restarted at 0 sees nothing of the old") {
        s->seq_keep(2);
        CHECK(s->seq_len(0) == 0);
        CHECK(s->seq_tokens(0).empty());
        CHECK(s->seq_len(2) == 9);
        REQUIRE_BIT_IDENTICAL(s->eval(X, 0, 2), fresh(concat(Y, X), 9), nv);
        REQUIRE_BIT_IDENTICAL(s->eval(X, 0, 0), fresh(X, 0), nv);
    }
    SECTION("reset empties the memory itself") {
        s->reset();
        for (int q = 0; q < 3; ++q) CHECK(s->seq_len(q) == 0);
        for (int il = 0; il < l.model->hparams().n_layer; ++il)
            for (const Tensor* t : {s->kv().k(il), s->kv().v(il)}) {
                std::vector<uint8_t> bytes(t->nbytes());
                read_tensor(*l.be, *t, bytes.data());
                REQUIRE(std::all_of(bytes.begin(), bytes.end(), [](uint8_t x) { return x == 0; }));
            }
        REQUIRE_BIT_IDENTICAL(s->eval(X, 0, 1), fresh(X, 0), nv);
    }
    REQUIRE_THROWS_AS(s->seq_cp(0, 3), std::out_of_range);
    REQUIRE_THROWS_AS(s->seq_rm(-1, 0), std::out_of_range);
    REQUIRE_THROWS_AS(s->seq_keep(5), std::out_of_range);
}

TEST_CASE("sequences: generate() reuses the whole cached prefix and equals a fresh evaluation", "[kv][seq]") {
    const std::string bk = GENERATE(from_range(all_backend_names()));
    const DType kv = GENERATE(DType::F16, DType::Q8_0);
    INFO("backend " << bk << ", kv cache " << dtype_name(kv));
    LoadedModel l = load(bk);
    const int32_t nv = int32_t(l.model->hparams().n_vocab);
    const Tokenizer tok = Tokenizer::from_gguf(l.model->gguf());
    SamplerParams greedy;
    greedy.temp = 0;
    auto s = session(l, 256, 8, 1, kv);  // windowed rings of 16 rows
    std::vector<int32_t> transcript;
    for (int turn = 0; turn < 6; ++turn) {
        INFO("turn " << turn);
        // The next prompt is the transcript so far (with what was generated) plus a new
        // "user message": the whole cache but nothing more is reusable.
        const size_t before = transcript.size();
        transcript = concat(transcript, random_tokens(size_t(5 + 3 * turn), uint32_t(60 + turn), nv));
        // Everything cached is a prefix of the new prompt: the last reply's tokens except
        // the final one, which generate() sampled but had no reason to evaluate.
        const int64_t cached = s->seq_len(0);
        if (turn > 0) REQUIRE(cached == int64_t(before) - 1);
        Sampler a(greedy), b(greedy);
        const GenerateResult got = generate(*s, tok, a, transcript, 7, 0, [](const std::string&) {});
        auto f = session(l, 256, 8, 1, kv);
        const GenerateResult want = generate(*f, tok, b, transcript, 7, 0, [](const std::string&) {});
        CHECK(want.n_reused == 0);
        CHECK(got.n_reused == cached);  // the whole cached list, no off-by-one
        REQUIRE(got.tokens == want.tokens);
        transcript = concat(transcript, got.tokens);
        if (got.stopped_at_eog) break;
    }

    // A prompt that diverges early, after the ring has wrapped: seq_rm cannot keep that
    // point, so the sequence starts over, and the result is still that of a fresh session.
    REQUIRE(s->seq_len(0) > 16);
    std::vector<int32_t> other = concat(head(transcript, 3), random_tokens(10, 99, nv));
    Sampler a(greedy), b(greedy);
    const GenerateResult got = generate(*s, tok, a, other, 5, 0, [](const std::string&) {});
    CHECK(got.n_reused == 0);
    const GenerateResult want = generate(*session(l, 256, 8, 1, kv), tok, b, other, 5, 0, [](const std::string&) {});
    REQUIRE(got.tokens == want.tokens);

    // The same prompt again: everything but the last token is reused (its logits are needed).
    const std::vector<int32_t> again = s->seq_tokens(0);
    Sampler c(greedy);
    const GenerateResult rep = generate(*s, tok, c, again, 1, 0, [](const std::string&) {});
    CHECK(rep.n_reused == int64_t(again.size()) - 1);
    CHECK(rep.n_evaluated == 1);
}

TEST_CASE("sequences: a bad batch is refused before anything is evaluated", "[kv][seq]") {
    LoadedModel l = load("cpu");
    const int32_t nv = int32_t(l.model->hparams().n_vocab);
    auto s = session(l, 16, 4, 2);
    s->eval({7, 8, 9}, -1, 1);
    auto refused = [&](const Batch& b, const std::string& why) {
        INFO(why);
        REQUIRE_THROWS_WITH(s->decode(b), Catch::Contains(why));
        CHECK(s->seq_len(0) == 0);
        CHECK(s->seq_len(1) == 3);
    };
    Batch b;
    b.add(5, 0, 0, true);
    b.add(6, 0, 2, true);  // skips position 1
    refused(b, "is at position 2, but the sequence continues at 1");
    b.clear();
    b.add(5, 1, 0, true);  // sequence 1 continues at 3
    refused(b, "continues at 3");
    b.clear();
    b.add(5, 0, 0, false);
    b.add(5, 2, 0, true);
    refused(b, "sequence 2 outside [0, 2)");
    b.clear();
    b.add(nv, 0, 0, true);
    refused(b, "outside the vocabulary");
    b.clear();
    for (int i = 0; i < 14; ++i) b.add(5, 1, 3 + i, false);
    refused(b, "more than the context of 16");
    b.clear();
    b.add(5, 0, 0, true);
    b.pos.push_back(1);
    refused(b, "differ in length");
    REQUIRE_THROWS_AS(s->eval({1, 2}, -1, 2), std::out_of_range);
}

TEST_CASE("sequences: context, ubatch, sequence count and cache type are checked at load", "[kv][seq]") {
    LoadedModel l = load("cpu");
    auto bad = [&](SessionParams p, const std::string& why) {
        INFO(why);
        REQUIRE_THROWS_WITH(Session(*l.model, *l.be, p), Catch::Contains(why));
    };
    SessionParams p;
    p.n_ctx = 0;
    bad(p, "context size must be at least 1");
    p = {};
    p.n_ubatch = 0;
    bad(p, "ubatch size must be at least 1");
    p = {};
    p.n_batch = -3;
    bad(p, "batch size must be at least 1");
    p = {};
    p.n_seq = 0;
    bad(p, "number of sequences must be at least 1");
    p = {};
    p.type_v = DType::Q4_K;
    bad(p, "V cache type q4_k is not supported");

    // Rows of 48 values (head_dim 48, one KV head) do not fill Q8_0's blocks of 32.
    TinyGemma3Spec odd = seq_spec();
    odd.head_dim = 48;
    odd.n_embd = 96;
    odd.wtype = DType::F16;
    LoadedModel o = load_tiny("cpu", "seq_odd_rows", odd);
    p = {};
    p.type_k = DType::Q8_0;
    REQUIRE_THROWS_WITH(Session(*o.model, *o.be, p), Catch::Contains("K cache type q8_0 stores blocks of 32 values, but layer 0 has K rows of 48"));
    p = {};
    p.n_ctx = 64;
    p.n_ubatch = 16;
    Session fine(*o.model, *o.be, p);  // f16 rows of 48 values are fine
    CHECK(fine.kv().ring_rows(0) == kWindow + 16);

    // A window wider than the model's own context is a broken file.
    TinyGemma3Spec wide = seq_spec();
    wide.window = 300;
    REQUIRE_THROWS_WITH(load_tiny("cpu", "seq_wide_window", wide), Catch::Contains("sliding window of 300"));
}
