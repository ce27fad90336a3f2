// SEMANTICS.md section 1 on the default model (Gemma 3 270M: window 512, five windowed
// layers per global one): past-window prompts in one ubatch, 1024-token ubatches whose rings
// wrap, six-turn chat with prefix reuse, and quantized KV caches. CPU backend. The exact
// oracles are other batchings of the same tokens: token at a time over 700 tokens, and 7-token
// ubatches (the decode kernels, rings of 519 rows) against 1024-token ones (rings of 1536).
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>

#include "core/runtime/generate.h"
#include "core/runtime/session.h"
#include "core/text/tokenizer.h"
#include "tests/support/logits_util.h"
#include "tests/support/test_util.h"
#include "core/models/registry.h"

using namespace ls;
using namespace ls::test;

namespace {

struct Loaded {
    std::unique_ptr<Backend> be;
    std::unique_ptr<Model> model;
    std::unique_ptr<Tokenizer> tok;
};

Loaded load_default(const std::string& backend = "cpu") {
    Loaded l;
    l.be = make_backend(backend);
    l.model = load_model(default_model_path(), *l.be);
    l.tok = std::make_unique<Tokenizer>(Tokenizer::from_gguf(l.model->gguf()));
    return l;
}

std::unique_ptr<Session> session(const Loaded& l, int64_t n_ctx, int64_t n_ubatch, DType kv = DType::F16) {
    SessionParams p;
    p.n_ctx = n_ctx;
    p.n_batch = n_ubatch;
    p.n_ubatch = n_ubatch;
    p.type_k = p.type_v = kv;
    return std::make_unique<Session>(*l.model, *l.be, p);
}

// BOS and the GPL-3 text, repeated until n tokens.
std::vector<int32_t> text_tokens(const Tokenizer& tok, size_t n) {
    std::ifstream f(test_data("GPL-3.txt"), std::ios::binary);
    std::stringstream ss;
    ss << f.rdbuf();
    REQUIRE(!ss.str().empty());
    const std::vector<int32_t> body = tok.encode(ss.str(), false, false);
    std::vector<int32_t> t{tok.bos()};
    while (t.size() < n) t.insert(t.end(), body.begin(), body.begin() + std::min(body.size(), n - t.size()));
    return t;
}

// Perplexity of the second half of each n_ctx chunk (as `lockstep perplexity` scores).
double perplexity(const Loaded& l, const std::vector<int32_t>& toks, int64_t n_ctx, int64_t n_chunks, DType kv) {
    auto s = session(l, n_ctx, 512, kv);
    const int64_t nv = s->n_vocab(), first = n_ctx / 2;
    double nll = 0;
    int64_t count = 0;
    for (int64_t c = 0; c < n_chunks; ++c) {
        std::vector<int32_t> chunk(toks.begin() + c * n_ctx, toks.begin() + (c + 1) * n_ctx);
        chunk[0] = l.tok->bos();
        s->reset();
        // Only the next token's log-probability of each row (a whole log-softmax of 512 rows
        // is a gigabyte of doubles).
        const std::vector<float> logits = s->eval(chunk, first);
        for (int64_t i = first; i + 1 < n_ctx; ++i, ++count) {
            const float* row = logits.data() + size_t(i - first) * size_t(nv);
            nll -= double(row[chunk[size_t(i + 1)]]) - log_sum_exp(row, nv);
        }
    }
    return std::exp(nll / double(count));
}

}  // namespace

TEST_CASE("long context: 700 tokens in one ubatch equal token-at-a-time evaluation at every position", "[model][kv]") {
    Loaded l = load_default();
    const std::vector<int32_t> prompt = text_tokens(*l.tok, 700);  // window 512
    const int64_t nv = l.model->hparams().n_vocab;
    const std::vector<float> batched = session(l, 1024, 700)->eval(prompt, 0);
    auto single = session(l, 1024, 1);  // windowed rings of 513 rows: they wrap at 513
    for (size_t p = 0; p < prompt.size(); ++p) {
        const std::vector<float> one = single->eval({prompt[p]});
        INFO("position " << p);
        REQUIRE_BIT_IDENTICAL(one, std::vector<float>(batched.begin() + p * nv, batched.begin() + (p + 1) * nv), nv);
    }
}

TEST_CASE("long context: 1024-token ubatches over wrapping rings equal 7-token ubatches (1124 and 2148 tokens)",
          "[model][kv][ring]") {
    Loaded l = load_default();
    // Ubatches twice the default (-ub 512): windowed rings of W + B = 1536 rows, which the
    // 2148-token prompt wraps. (At 4096-token ubatches the same test took minutes, in the
    // prompt side's attention, for no other property.)
    constexpr size_t kBig = 1024;
    const int64_t nv = l.model->hparams().n_vocab, n_ctx = 2304;
    const std::vector<int32_t> text = text_tokens(*l.tok, 2148);
    // Positions compared: the whole last chunk of each prompt (shorter than the window, so its
    // queries read back across the chunk boundary and the wrap), and a sample of the rest.
    auto wanted = [](size_t len) {
        std::vector<size_t> p;
        for (size_t i = 0; i < len; ++i)
            if (i >= len / kBig * kBig || i % 331 == 0 || i % kBig == kBig - 1 || i % kBig == 0) p.push_back(i);
        return p;
    };
    struct Chunked {
        size_t len;
        std::vector<size_t> pos;
        std::vector<float> logits;
    };
    std::vector<Chunked> runs;
    for (size_t len : {size_t(1124), size_t(2148)}) {
        Chunked c{len, wanted(len), {}};
        auto s = session(l, n_ctx, int64_t(kBig));
        REQUIRE(s->kv().ring_rows(0) == 512 + kBig);
        Batch b;
        size_t k = 0;
        for (size_t i = 0; i < len; ++i) {
            const bool want = k < c.pos.size() && c.pos[k] == i;
            k += want;
            b.add(text[i], 0, int32_t(i), want);
        }
        c.logits = s->decode(b);
        REQUIRE(c.logits.size() == c.pos.size() * size_t(nv));
        runs.push_back(std::move(c));
    }
    // One pass in 7-token ubatches over 2148 tokens serves both prompts (the 1124 one is its
    // prefix, and attention is causal): the decode steps' kernels (up to 8 tokens), windowed
    // rings of 512 + 7 rows that wrap every 519 positions, and chunk boundaries that never
    // meet the 1024-token ones.
    constexpr size_t kStep = 7;
    auto small = session(l, n_ctx, int64_t(kStep));
    REQUIRE(small->kv().ring_rows(0) == 512 + kStep);
    size_t compared[2] = {0, 0};
    for (size_t i0 = 0; i0 < text.size(); i0 += kStep) {
        Batch step;
        std::vector<size_t> rows;  // positions with logits (the output projection dominates a step)
        for (size_t i = i0; i < std::min(text.size(), i0 + kStep); ++i) {
            const bool want = std::any_of(runs.begin(), runs.end(),
                                          [&](const Chunked& c) { return std::binary_search(c.pos.begin(), c.pos.end(), i); });
            step.add(text[i], 0, int32_t(i), want);
            if (want) rows.push_back(i);
        }
        const std::vector<float> out = small->decode(step);
        REQUIRE(out.size() == rows.size() * size_t(nv));
        for (size_t j = 0; j < rows.size(); ++j) {
            const std::vector<float> one(out.begin() + j * nv, out.begin() + (j + 1) * nv);
            for (size_t r = 0; r < runs.size(); ++r) {
                const Chunked& c = runs[r];
                const auto it = std::lower_bound(c.pos.begin(), c.pos.end(), rows[j]);
                if (it == c.pos.end() || *it != rows[j]) continue;
                INFO("prompt of " << c.len << " tokens, position " << rows[j]);
                const float* row = c.logits.data() + size_t(it - c.pos.begin()) * nv;
                REQUIRE_BIT_IDENTICAL(one, std::vector<float>(row, row + nv), nv);
                ++compared[r];
            }
        }
    }
    CHECK(compared[0] == runs[0].pos.size());
    CHECK(compared[1] == runs[1].pos.size());
}

TEST_CASE("long context: six chat turns with prefix reuse equal fresh evaluations of the transcript", "[model][kv][chat]") {
    // F16 cache here; a q8_0 cache's chat turns are the contract tests' (tests/support/kv_contract.h,
    // tiny models on every backend).
    const DType kv = DType::F16;
    Loaded l = load_default();
    // The first message pastes a long text, so that the transcript outgrows the windowed
    // rings (512 + 64 rows) and the later turns reuse a prefix across a wrap.
    std::ifstream f(test_data("GPL-3.txt"), std::ios::binary);
    std::string license(2600, '\0');
    f.read(license.data(), std::streamsize(license.size()));
    const std::string first = "Here is a license text:\n\n" + license + "\n\nWhat is the capital of France?";
    const char* user[6] = {first.c_str(),
                           "Tell me a short story about a lighthouse keeper.",
                           "Now translate the first sentence of that story into German.",
                           "List three prime numbers greater than 100.",
                           "Why is the sky blue? Answer in two sentences.",
                           "Summarize our conversation so far."};
    // A small ubatch, so that windowed rings (512 + 64 rows) wrap within the conversation.
    auto s = session(l, 2048, 64, kv);
    SamplerParams greedy;
    greedy.temp = 0;
    std::vector<ChatMsg> msgs;
    int64_t total_reused = 0;
    for (int turn = 0; turn < 6; ++turn) {
        INFO("turn " << turn + 1);
        msgs.push_back({"user", user[turn]});
        const std::vector<int32_t> ids = l.tok->encode(format_chat(msgs, true, "gemma3"), true, true);
        Sampler a(greedy), b(greedy);
        std::string reply, fresh_reply;
        // 24 tokens a reply: the transcript still outgrows the rings in the first turn (the
        // license), and each later turn reuses a prefix that crossed a wrap.
        const GenerateResult got = generate(*s, *l.tok, a, ids, 24, 0, [&](const std::string& t) { reply += t; });
        auto f = session(l, 2048, 64, kv);
        const GenerateResult want = generate(*f, *l.tok, b, ids, 24, 0, [&](const std::string& t) { fresh_reply += t; });
        REQUIRE(got.tokens == want.tokens);
        REQUIRE(reply == fresh_reply);
        // The logits, not only their greedy picks: one more step of each with the reply's last
        // token, over the whole reused and the whole fresh cache, bit for bit.
        const int32_t probe = got.tokens.empty() ? ids.back() : got.tokens.back();
        REQUIRE_BIT_IDENTICAL(s->eval({probe}), f->eval({probe}), l.model->hparams().n_vocab);
        if (turn > 0) CHECK(got.n_reused > 0);
        total_reused += got.n_reused;
        msgs.push_back({"assistant", reply});
    }
    WARN("prompt tokens reused over six turns: " << total_reused << " (transcript now " << s->seq_len(0)
                                                   << " tokens); last reply: " << msgs.back().content);
    CHECK(s->seq_len(0) > 512 + 64);  // the rings did wrap
}

TEST_CASE("long context: perplexity with q8_0 and q4_0 KV caches stays near f16", "[model][kv][quant]") {
    Loaded l = load_default();
    const std::vector<int32_t> toks = text_tokens(*l.tok, 2 * 1024);
    const double f16 = perplexity(l, toks, 1024, 2, DType::F16);
    const double q8 = perplexity(l, toks, 1024, 2, DType::Q8_0);
    const double q4 = perplexity(l, toks, 1024, 2, DType::Q4_0);
    WARN("PPL over 2 chunks of 1024 (window 512): f16 " << f16 << ", q8_0 " << q8 << " (" << (q8 / f16 - 1) * 100
                                                          << "%), q4_0 " << q4 << " (" << (q4 / f16 - 1) * 100 << "%)");
    // 8-bit K/V: within 1% (measured +0.37%; ik_llama.cpp on the same text and model +0.14%).
    CHECK(std::fabs(q8 / f16 - 1) < 0.01);
    // 4-bit K/V costs this small model (head size 256) much more than the 5% the issue hoped
    // for, in every engine: measured +13.5% here; ik_llama.cpp 8337e4c (-fa on -ctk/-ctv q4_0)
    // on the same file and text +11.6%, and over 6 chunks +15.7% against lockstep's +15.9%.
    // The bound is set above that spread, so a broken q4_0 path (PPL in the hundreds) fails.
    CHECK(q4 > f16);
    CHECK(std::fabs(q4 / f16 - 1) < 0.20);
}
