// The server's engine without HTTP: jobs served together (more than the slots, so some queue)
// give exactly the tokens and text they give alone; a cancelled job leaves the others
// unchanged; a full queue refuses. Runs under ASan/UBSan in CI with the engine's thread.
#include <catch2/catch.hpp>

#include <limits>

#include "core/runtime/session.h"
#include "core/text/tokenizer.h"
#include "tests/support/tiny_model.h"
#include "tools/server/engine.h"

using namespace ls;
using namespace ls::server;

namespace {

struct Outcome {
    std::string text, finish, error;
    std::vector<int32_t> ids;
    std::vector<float> logprobs;
    int64_t completion_tokens = 0;
    bool operator==(const Outcome& o) const {
        return text == o.text && finish == o.finish && error == o.error && ids == o.ids && logprobs == o.logprobs &&
               completion_tokens == o.completion_tokens;
    }
};

Outcome collect(Job& j) {
    Outcome o;
    JobEvent e;
    while (true) {
        REQUIRE(j.pop(e, std::chrono::seconds(120)));
        o.text += e.text;
        for (const auto& t : e.tokens) o.ids.push_back(t.id), o.logprobs.push_back(t.logprob);
        if (e.last()) {
            o.finish = e.finish;
            o.error = e.error;
            o.completion_tokens = e.usage.completion_tokens;
            return o;
        }
    }
}

JobParams params_for(const Tokenizer& tok, int i, int max_tokens) {
    static const char* prompts[] = {"the cat sat on the mat", "in the beginning", "and then it was", "on and on it went",
                                    "is it the end", "at the station there was a train and it left"};
    JobParams p;
    p.prompt = tok.encode(prompts[i % 6], true, true);
    p.max_tokens = max_tokens;
    p.sampling.temp = i % 3 == 0 ? 0.0f : 0.9f;
    p.sampling.seed = 77 + uint64_t(i);
    p.sampling.top_k = 20;
    p.sampling.want_logprobs = i % 2 == 0;
    p.sampling.n_logprobs = 2;
    if (i == 4) p.stop = {"e"};
    return p;
}

// A job that cannot finish before the test acts on it (cancels it, or submits beside it): no
// length limit but the context (about 120 tokens) and no end-of-generation token to draw. A
// 40-token job could finish first, lookup speculation makes that likelier, and the test would
// then check nothing of what it names.
JobParams unending(const Tokenizer& tok, int i) {
    JobParams p = params_for(tok, i, -1);
    for (int32_t id = 0; id < tok.n_vocab(); ++id)
        if (tok.is_eog(id)) p.sampling.logit_bias.emplace_back(id, -std::numeric_limits<float>::infinity());
    return p;
}

struct Rig {
    test::LoadedModel lm;
    std::unique_ptr<Tokenizer> tok;
    std::unique_ptr<Session> s;
    Metrics metrics;
    std::unique_ptr<Engine> engine;
    Rig(int slots, int max_queue, const SpecParams& speculation = {}) {
        TinyGemma3Spec spec;  // windowed layers of 8 and a global one
        spec.n_layer = 6;
        spec.ctx = 512;
        lm = test::load_tiny("cpu", "server_engine", spec);
        tok = std::make_unique<Tokenizer>(Tokenizer::from_gguf(lm.model->gguf()));
        SessionParams sp;
        sp.n_ctx = 128;
        sp.n_ubatch = 4;  // rings of 12 rows: prompts chunked, rings wrapped
        sp.n_seq = slots;
        s = std::make_unique<Session>(*lm.model, *lm.be, sp);
        engine = std::make_unique<Engine>(*s, *tok, metrics, max_queue, speculation);
    }
};

}  // namespace

TEST_CASE("server engine: jobs served together equal each served alone", "[server]") {
    Rig r(3, 8);
    const int n = 6;
    std::vector<Outcome> alone;
    for (int i = 0; i < n; ++i) {
        auto j = std::make_shared<Job>(params_for(*r.tok, i, 20));
        REQUIRE(r.engine->submit(j));
        alone.push_back(collect(*j));
        CHECK(alone.back().error.empty());
    }
    CHECK(alone[4].finish == "stop");  // the stop string "e"
    CHECK(alone[4].text.find('e') == std::string::npos);
    std::vector<std::shared_ptr<Job>> jobs;
    for (int i = 0; i < n; ++i) {
        jobs.push_back(std::make_shared<Job>(params_for(*r.tok, i, 20)));
        REQUIRE(r.engine->submit(jobs.back()));
    }
    for (int i = 0; i < n; ++i) CHECK(collect(*jobs[size_t(i)]) == alone[size_t(i)]);
    CHECK(r.metrics.slots_busy.load() == 0);
    CHECK(r.metrics.requests_finished.load() == uint64_t(2 * n));
}

TEST_CASE("server engine: a cancelled job leaves the others unchanged and frees its slot", "[server]") {
    Rig r(3, 8);
    std::vector<Outcome> alone;
    for (int i = 0; i < 3; ++i) {
        auto j = std::make_shared<Job>(params_for(*r.tok, i, 40));
        REQUIRE(r.engine->submit(j));
        alone.push_back(collect(*j));
    }
    std::vector<std::shared_ptr<Job>> jobs;
    for (int i = 0; i < 3; ++i) {
        jobs.push_back(std::make_shared<Job>(i == 1 ? unending(*r.tok, i) : params_for(*r.tok, i, 40)));
        REQUIRE(r.engine->submit(jobs.back()));
    }
    JobEvent e;
    REQUIRE(jobs[1]->pop(e, std::chrono::seconds(60)));
    REQUIRE_FALSE(e.last());
    jobs[1]->cancel();
    CHECK(collect(*jobs[0]) == alone[0]);
    CHECK(collect(*jobs[2]) == alone[2]);
    // The engine drops the job at its next step; then every slot is free again.
    for (int k = 0; k < 1000 && r.metrics.slots_busy.load() != 0; ++k) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    CHECK(r.metrics.slots_busy.load() == 0);
    CHECK(r.metrics.requests_cancelled.load() == 1);
    auto again = std::make_shared<Job>(params_for(*r.tok, 1, 40));
    REQUIRE(r.engine->submit(again));
    CHECK(collect(*again) == alone[1]);
}

TEST_CASE("server engine: beyond the slots and the queue, submit refuses", "[server]") {
    Rig r(1, 0);
    auto a = std::make_shared<Job>(unending(*r.tok, 0));
    auto b = std::make_shared<Job>(params_for(*r.tok, 1, 4));
    REQUIRE(r.engine->submit(a));
    CHECK_FALSE(r.engine->submit(b));  // the one slot is taken (or about to be), no queue
    const Outcome done = collect(*a);
    CHECK(done.error.empty());
    CHECK(done.finish == "length");  // ran to the full context
    r.engine->shutdown();
    CHECK_FALSE(r.engine->submit(b));  // after shutdown
}

TEST_CASE("server engine: slots that speculate (few busy) answer as slots that do not", "[server][spec]") {
    // Speculation (prompt lookup, the default) while at most 2 slots are busy; none with it off.
    SpecParams off;
    off.mode = SpecMode::Off;
    Rig plain(3, 8, off), spec(3, 8);
    const int n = 6;
    std::vector<Outcome> want;
    for (int i = 0; i < n; ++i) {
        auto j = std::make_shared<Job>(params_for(*plain.tok, i, 60));
        REQUIRE(plain.engine->submit(j));
        want.push_back(collect(*j));
    }
    CHECK(plain.metrics.spec_guessed.load() == 0);
    // Alone (speculating), then two at once (speculating), then all six (three slots busy).
    for (int i = 0; i < n; ++i) {
        auto j = std::make_shared<Job>(params_for(*spec.tok, i, 60));
        REQUIRE(spec.engine->submit(j));
        CHECK(collect(*j) == want[size_t(i)]);
    }
    for (int round = 0; round < 2; ++round) {
        std::vector<std::shared_ptr<Job>> jobs;
        const int k = round == 0 ? 2 : n;
        for (int i = 0; i < k; ++i) {
            jobs.push_back(std::make_shared<Job>(params_for(*spec.tok, i, 60)));
            REQUIRE(spec.engine->submit(jobs.back()));
        }
        for (int i = 0; i < k; ++i) CHECK(collect(*jobs[size_t(i)]) == want[size_t(i)]);
    }
    INFO(spec.metrics.spec_accepted.load() << " of " << spec.metrics.spec_guessed.load() << " guesses kept");
    CHECK(spec.metrics.spec_guessed.load() > 0);
    CHECK(spec.metrics.spec_accepted.load() > 0);
}

TEST_CASE("server engine: n choices evaluate the prompt once and each equals a one-choice job of its draw stream", "[server]") {
    Rig rig(4, 4);
    for (int i : {1, 2, 5}) {  // sampled, with and without logprobs; a long prompt (ring wraps)
        JobParams p = params_for(*rig.tok, i, 24);
        p.n = 3;
        const uint64_t steps0 = rig.metrics.prompt_tokens.load(), reused0 = rig.metrics.prompt_tokens_reused.load();
        auto job = std::make_shared<Job>(p);
        REQUIRE(rig.engine->submit(job));
        std::vector<Outcome> got(3);
        std::vector<std::string> text(3);
        int open = 3;
        while (open > 0) {
            JobEvent e;
            REQUIRE(job->pop(e, std::chrono::seconds(120)));
            REQUIRE(e.error.empty());
            Outcome& o = got.at(size_t(e.choice));
            o.text += e.text;
            for (const auto& t : e.tokens) o.ids.push_back(t.id), o.logprobs.push_back(t.logprob);
            if (!e.finish.empty()) o.finish = e.finish, o.completion_tokens = e.usage.completion_tokens, --open;
        }
        // Counted once: the copies did not evaluate it again.
        CHECK(rig.metrics.prompt_tokens.load() - steps0 == p.prompt.size());
        const uint64_t evaluated = (rig.metrics.prompt_tokens.load() - steps0) - (rig.metrics.prompt_tokens_reused.load() - reused0);
        CHECK(evaluated <= p.prompt.size());
        for (int k = 0; k < 3; ++k) {
            JobParams one = params_for(*rig.tok, i, 24);
            one.sampling.stream += uint64_t(k);
            auto j = std::make_shared<Job>(one);
            REQUIRE(rig.engine->submit(j));
            CHECK(collect(*j) == got[size_t(k)]);
        }
        CHECK(got[0].ids != got[1].ids);
    }
    // More choices than free slots wait for them; the job beside finishes unchanged.
    JobParams a = params_for(*rig.tok, 3, 16);
    auto alone = std::make_shared<Job>(a);
    REQUIRE(rig.engine->submit(alone));
    const Outcome want = collect(*alone);
    auto beside = std::make_shared<Job>(a);
    JobParams many = params_for(*rig.tok, 1, 16);
    many.n = 4;
    auto wide = std::make_shared<Job>(many);
    REQUIRE(rig.engine->submit(beside));
    REQUIRE(rig.engine->submit(wide));
    CHECK(collect(*beside) == want);
    int finished = 0;
    while (finished < 4) {
        JobEvent e;
        REQUIRE(wide->pop(e, std::chrono::seconds(120)));
        REQUIRE(e.error.empty());
        finished += e.finish.empty() ? 0 : 1;
    }
}
