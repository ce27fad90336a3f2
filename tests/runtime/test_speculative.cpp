// Speculative decoding (issue 21): with any guess source, generate() gives the tokens of plain
// decoding, byte for byte, greedy and seeded, and leaves the sequence as plain decoding does;
// on the tiny SWA Gemma 3 (rings of W + B = 16 rows: verification steps span ring wraps),
// Gemma 4 and the hybrid qwen35 (rejected guesses roll the recurrent state back through the
// step checkpoint), on every backend under test.
#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>
#include <limits>

#include "core/runtime/generate.h"
#include "core/runtime/speculative.h"
#include "core/text/tokenizer.h"
#include "tests/support/logits_util.h"
#include "tests/support/tiny_model.h"

using namespace ls;
using namespace ls::test;

namespace {

// Whether the runs are the short ones: on a GPU emulated on the CPU (lavapipe in CI: about a
// second a token there), and in the sanitizer build (test::kSanitized: every backend there,
// at several times its Release cost); 64 tokens already span many ring wraps and rollbacks,
// and the Release run generates the full 256 on the CPU and the reference.
bool short_runs(const std::string& backend) { return cpu_emulated_gpu(backend) || kSanitized; }

// Tokens generated: 256, or as many as the context leaves room for (the tiny Gemma 4 was
// trained with a context of 256); 64 where short_runs.
int64_t n_gen(const Session& s, size_t prompt, const std::string& backend) {
    const int64_t n = short_runs(backend) ? 64 : 256;
    return std::min<int64_t>(n, s.params().n_ctx - int64_t(prompt) - 3);
}

// The tiny models, by name: "swa" (Gemma 3, window 8), "gemma4", "qwen35" (hybrid; given the
// tiny vocabulary, as it has no tokenizer).
std::string model_path(const std::string& name) {
    if (name == "swa") return tiny_swa_path();
    if (name == "qwen35") {
        static const std::string p = [] {
            const std::string out = temp_path("spec_qwen35_vocab.gguf");
            write_with_tiny_vocab(test_data("qwen35_tiny.gguf"), out);
            return out;
        }();
        return p;
    }
    return test_data(name + "_tiny.gguf");
}

struct Setup {
    LoadedModel l;
    std::unique_ptr<Tokenizer> tok;
    std::string backend;
};

Setup load(const std::string& backend, const std::string& name) {
    Setup s;
    s.backend = backend;
    s.l.be = make_backend(backend);
    s.l.model = load_model(model_path(name), *s.l.be);
    s.tok = std::make_unique<Tokenizer>(Tokenizer::from_gguf(s.l.model->gguf()));
    return s;
}

std::unique_ptr<Session> session(const Setup& m, int64_t n_ubatch) {
    SessionParams p;
    p.n_ctx = 512;
    p.n_ubatch = n_ubatch;
    return std::make_unique<Session>(*m.l.model, *m.l.be, p);
}

SamplerParams sampling(bool greedy, const Tokenizer& tok) {
    SamplerParams p;
    p.temp = greedy ? 0.0f : 0.9f;
    p.top_k = 0;
    p.top_p = 1.0f;
    p.min_p = 0.0f;
    p.seed = 1234;
    // No end-of-generation token: every run generates all 256 tokens.
    for (int32_t id = 0; id < tok.n_vocab(); ++id)
        if (tok.is_eog(id)) p.logit_bias.push_back({id, -std::numeric_limits<float>::infinity()});
    return p;
}

// A prompt with a repeated stretch, so that prompt lookup finds something from the start.
std::vector<int32_t> prompt_for(int32_t nv) {
    const auto a = random_tokens(12, 3, nv), b = random_tokens(5, 4, nv);
    return concat(concat(concat(a, b), a), b);
}

struct Run {
    std::vector<int32_t> tokens, held;  // generated; what the sequence holds afterwards
    std::vector<float> after;           // logits of three more tokens evaluated after the run
    SpecStats spec;
};

Run run(const Setup& m, int64_t n_ubatch, bool greedy, Speculator* spec) {
    auto s = session(m, n_ubatch);
    Sampler smp(sampling(greedy, *m.tok));
    const auto prompt = prompt_for(m.tok->n_vocab());
    Run r;
    const GenerateResult g = generate(*s, *m.tok, smp, prompt, n_gen(*s, prompt.size(), m.backend), 0, [](const std::string&) {}, nullptr, spec);
    r.tokens = g.tokens;
    r.spec = g.spec;
    r.held = s->seq_tokens(0);
    // The sequence continues exactly as after plain decoding (KV rows, rings, recurrent state).
    r.after = s->eval({7, 8, 9}, 0, 0);
    return r;
}

// Guesses made from the plain run's tokens, one of them spoiled in a rotating place (or none),
// so that every acceptance length from 0 to k occurs; every step checks k guesses.
struct Oracle {
    std::vector<int32_t> truth;  // prompt + plain generation
    int32_t nv;
    int64_t calls = 0;
    std::vector<int32_t> operator()(const std::vector<int32_t>& tokens, int32_t, int k) {
        std::vector<int32_t> g;
        const size_t from = tokens.size() + 1;
        for (size_t i = from; i < truth.size() && g.size() < size_t(k); ++i) g.push_back(truth[i]);
        const size_t bad = size_t(calls++ % (k + 1));
        if (bad < g.size()) g[bad] = (g[bad] + 1) % nv;
        return g;
    }
};

void check_same(const Setup& m, const Run& got, const Run& want, const std::string& what) {
    INFO(what << ": " << got.spec.n_accepted << " of " << got.spec.n_guessed << " guesses accepted in " << got.spec.n_steps << " steps");
    REQUIRE(got.tokens.size() == want.tokens.size());
    REQUIRE(int64_t(got.tokens.size()) >= (short_runs(m.backend) ? 60 : 200));
    CHECK(got.tokens == want.tokens);
    CHECK(got.held == want.held);
    CHECK(first_difference(got.after, want.after, int64_t(got.after.size() / 3)) == "");
}

}  // namespace

TEST_CASE("speculative: lookup, draft and spoiled guesses give plain decoding's tokens, greedy and seeded", "[spec]") {
    const std::string bk = GENERATE(from_range(all_backend_names()));
    const std::string name = GENERATE(as<std::string>{}, "swa", "gemma4", "qwen35");
    const bool greedy = GENERATE(true, false);
    INFO("backend " << bk << ", model " << name << (greedy ? ", greedy" : ", seeded sampling"));
    const Setup m = load(bk, name);
    const int64_t ub = 8;  // the SWA model's rings hold W + B = 16 rows: most steps span a wrap
    const Run plain = run(m, ub, greedy, nullptr);
    CHECK(plain.spec.n_guessed == 0);

    SpecParams lp;
    lp.draft_max = 7;
    Speculator lookup(lp);
    const Run lk = run(m, ub, greedy, &lookup);
    check_same(m, lk, plain, "lookup");

    // The model as its own draft: greedy drafts are all accepted in greedy runs and often
    // rejected in sampled ones.
    SpecParams dp = lp;
    dp.mode = SpecMode::Draft;
    auto ds = session(m, ub);
    Speculator draft(dp, ds.get(), 0);
    const Run dr = run(m, ub, greedy, &draft);
    check_same(m, dr, plain, "draft");
    // (Not all: the draft does not know of the sampler's ban on end-of-generation tokens.)
    // (Over the 64 tokens of short_runs each such ban weighs more: three quarters.)
    if (greedy) CHECK(dr.spec.n_accepted * (short_runs(m.backend) ? 4 : 10) >= dr.spec.n_guessed * (short_runs(m.backend) ? 3 : 9));

    // Spoiled guesses at every offset, every step (no adaptation): acceptance lengths 0..7,
    // rollbacks after each, steps that run to the end of the generation.
    SpecParams op = lp;
    op.adaptive = false;
    Oracle oracle{concat(prompt_for(m.tok->n_vocab()), plain.tokens), m.tok->n_vocab()};
    Speculator spoiled(op, std::ref(oracle));
    const Run sp = run(m, ub, greedy, &spoiled);
    check_same(m, sp, plain, "spoiled oracle");
    CHECK(sp.spec.n_accepted > 0);
    CHECK(sp.spec.n_accepted < sp.spec.n_guessed);
    CHECK(sp.spec.n_steps > int64_t(sp.tokens.size()) / 8);
}

TEST_CASE("speculative: a wide ubatch and long guesses equal plain decoding too", "[spec]") {
    const std::string name = GENERATE(as<std::string>{}, "swa", "qwen35");
    INFO("model " << name);
    const Setup m = load("cpu", name);
    const Run plain = run(m, 64, false, nullptr);
    SpecParams op;
    op.draft_max = 32;
    op.adaptive = false;
    Oracle oracle{concat(prompt_for(m.tok->n_vocab()), plain.tokens), m.tok->n_vocab()};
    Speculator spoiled(op, std::ref(oracle));
    check_same(m, run(m, 64, false, &spoiled), plain, "spoiled oracle, k 32");
}

TEST_CASE("speculative: prompt lookup guesses what followed the latest match of the longest suffix", "[spec]") {
    SpecParams p;
    p.ngram_min = 2;
    p.ngram_max = 3;
    Speculator s(p);
    // With the pending 3 the text ends "8 2 3": no earlier "8 2 3", and the latest "2 3" is
    // the second one, followed by 9 9 8 2.
    const std::vector<int32_t> t = {1, 2, 3, 4, 5, 6, 7, 1, 2, 3, 9, 9, 8, 2};
    CHECK(s.guess(t, 3, 4) == std::vector<int32_t>{9, 9, 8, 2});
    // A period shorter than k repeats through the guesses themselves.
    CHECK(s.guess({5, 6, 5, 6}, 5, 5) == std::vector<int32_t>{6, 5, 6, 5, 6});
    // Nothing matches: no guesses.
    CHECK(s.guess({1, 2, 3}, 4, 4).empty());
    // An image's tokens (negative tags in the sequence's history) are never guessed: the
    // guesses stop before the first.
    CHECK(s.guess({7, 8, -5, -5, -5, 1, 7}, 8, 4).empty());
    CHECK(s.guess({7, 8, 9, -5, -5, 1, 7}, 8, 4) == std::vector<int32_t>{9});
    // Adaptation: two steps with nothing accepted pause guessing; so do two steps that kept
    // guesses but gave fewer tokens per second than a plain step.
    Speculator a(p);
    CHECK(a.budget() > 0);
    for (int i = 0; i < 2; ++i) a.record(a.budget(), 0);
    CHECK(a.budget() == 0);
    Speculator c(p);
    c.plain(1.0);
    c.record(4, 1, 1.5);  // 2 tokens in 1.5 s: paid
    c.record(c.budget(), 1, 1.5);
    CHECK(c.budget() > 0);
    c.record(c.budget(), 1, 3.0);  // 2 tokens in 3 s: slower than plain steps
    c.record(c.budget(), 1, 3.0);
    CHECK(c.budget() == 0);
}

TEST_CASE("speculative: bad parameters and a draft model with another vocabulary are refused", "[spec]") {
    SpecParams p;
    p.draft_max = -1;
    CHECK_THROWS_WITH(Speculator(p), Catch::Contains("draft-max must be >= 0"));
    p.draft_max = 2;
    p.draft_min = 3;
    CHECK_THROWS_WITH(Speculator(p), Catch::Contains("must not exceed draft-max"));
    p.draft_min = 0;
    p.mode = SpecMode::Draft;
    CHECK_THROWS_WITH(Speculator(p), Catch::Contains("needs a draft model"));
    CHECK_THROWS_WITH(spec_mode_from_name("foo"), Catch::Contains("off, lookup or draft"));
    auto be = make_backend("cpu");
    auto g4 = load_model(test_data("gemma4_tiny.gguf"), *be);
    auto swa = load_model(model_path("swa"), *be);
    CHECK_NOTHROW(check_draft_vocabulary(*g4, *g4));
    CHECK_THROWS_WITH(check_draft_vocabulary(*g4, *swa), Catch::Contains("a draft model must share the model's vocabulary"));
}

TEST_CASE("speculative: the default model copies a paragraph with lookup and the tokens equal plain decoding", "[spec][model]") {
    // 256 tokens, greedy and seeded, on a prompt the model largely copies (lookup keeps many
    // guesses) and the same tokens as plain decoding; on the backends under test.
    for (const std::string& bk : backend_names_under_test()) {
        INFO("backend " << bk);
        Setup m;
        m.l.be = make_backend(bk);
        m.l.model = load_model(default_model_path(), *m.l.be);
        m.tok = std::make_unique<Tokenizer>(Tokenizer::from_gguf(m.l.model->gguf()));
        const ChatTemplate& tmpl = chat_template_for(m.l.model->hparams().arch, [&](std::string_view t) { return m.tok->find_token(t) >= 0; });
        const std::string text =
            "The lighthouse stood on a rock at the mouth of the harbour, and for ninety years a keeper had climbed its "
            "hundred and twelve steps every evening to light the lamp. The last keeper kept a logbook in which she wrote "
            "the weather, the ships that passed, and the birds that struck the glass on stormy nights.\n\n"
            "Repeat the text above exactly, twice.";
        const auto prompt = m.tok->encode(format_chat({{"user", text}}, true, tmpl), m.tok->add_bos_default(), true);
        for (const bool greedy : {true, false}) {
            INFO((greedy ? "greedy" : "seeded"));
            auto gen = [&](Speculator* spec) {
                SessionParams p;
                p.n_ctx = 1024;
                Session s(*m.l.model, *m.l.be, p);
                SamplerParams sp = sampling(greedy, *m.tok);
                sp.temp = greedy ? 0.0f : 0.7f;
                Sampler smp(sp);
                return generate(s, *m.tok, smp, prompt, 256, 0, [](const std::string&) {}, nullptr, spec);
            };
            const GenerateResult plain = gen(nullptr);
            Speculator lookup(SpecParams{});
            const GenerateResult got = gen(&lookup);
            INFO(got.spec.n_accepted << " of " << got.spec.n_guessed << " guesses accepted");
            CHECK(got.tokens == plain.tokens);
            CHECK(got.spec.n_accepted > 0);
        }
    }
}
