#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <limits>
#include <map>
#include <numeric>
#include <random>
#include <set>

#include "core/sampling/sampler.h"

using namespace ls;

namespace {

SamplerParams plain(float temp) {
    SamplerParams p;
    p.temp = temp;
    p.top_k = 0;
    p.top_p = 1.0f;
    p.min_p = 0.0f;
    p.seed = 1234;
    return p;
}

// Logits whose softmax (temp 1) is exactly `probs`.
std::vector<float> from_probs(const std::vector<float>& probs) {
    std::vector<float> l;
    for (float p : probs) l.push_back(std::log(p));
    return l;
}

std::map<int32_t, int> histogram(SamplerParams p, const std::vector<float>& logits, int draws) {
    Sampler s(p);
    std::map<int32_t, int> h;
    for (int i = 0; i < draws; ++i) {
        std::vector<float> l = logits;
        h[s.sample(l.data(), int(l.size()), nullptr, 0, i)]++;  // a new position each draw
    }
    return h;
}

std::set<int32_t> keys(const std::map<int32_t, int>& h) {
    std::set<int32_t> k;
    for (auto& [id, n] : h) k.insert(id);
    return k;
}

std::vector<float> random_logits(int n, uint64_t seed) {
    std::mt19937_64 g(seed);
    std::normal_distribution<float> d(0.0f, 3.0f);
    std::vector<float> l(static_cast<size_t>(n));
    for (float& x : l) x = d(g);
    return l;
}

}  // namespace

TEST_CASE("sampling: greedy picks the argmax, lowest id on ties", "[sampling]") {
    Sampler s(plain(0.0f));
    std::vector<float> l = {1.0f, 3.0f, 3.0f, 2.0f};
    CHECK(s.sample(l.data(), 4, {}) == 1);
    std::vector<float> neg = {-5.0f, -1.0f, -1.0f};
    CHECK(s.sample(neg.data(), 3, {}) == 1);
    SamplerParams p = plain(-1.0f);
    Sampler s2(p);
    CHECK(s2.sample(l.data(), 4, {}) == 1);
}

TEST_CASE("sampling: top_k=1 equals greedy", "[sampling]") {
    for (uint64_t seed = 0; seed < 20; ++seed) {
        auto logits = random_logits(1000, seed);
        // plant a tie at the maximum: the lower id must win
        auto mx = std::max_element(logits.begin(), logits.end());
        int32_t arg = int32_t(mx - logits.begin());
        logits[999] = *mx;
        SamplerParams p = plain(0.8f);
        p.top_k = 1;
        p.seed = seed;
        Sampler s(p), g(plain(0.0f));
        std::vector<float> a = logits, b = logits;
        CHECK(s.sample(a.data(), 1000, {}) == arg);
        CHECK(g.sample(b.data(), 1000, {}) == arg);
    }
}

TEST_CASE("sampling: same seed, same draws", "[sampling]") {
    auto logits = random_logits(5000, 7);
    SamplerParams p;  // defaults: top-k 40, top-p 0.95, min-p 0.05
    p.temp = 1.5f;
    p.seed = 42;
    auto run = [&](uint64_t seed) {
        SamplerParams q = p;
        q.seed = seed;
        Sampler s(q);
        std::vector<int32_t> out;
        for (int i = 0; i < 200; ++i) {
            std::vector<float> l = logits;
            out.push_back(s.sample(l.data(), 5000, out));
        }
        return out;
    };
    auto a = run(42), b = run(42), c = run(43);
    CHECK(a == b);
    CHECK(a != c);
    CHECK(std::set<int32_t>(a.begin(), a.end()).size() > 1);  // it really samples
}

TEST_CASE("sampling: top-k, top-p and min-p keep the expected sets", "[sampling]") {
    const auto logits = from_probs({0.5f, 0.3f, 0.15f, 0.05f});
    SamplerParams p = plain(1.0f);
    CHECK(keys(histogram(p, logits, 4000)) == std::set<int32_t>{0, 1, 2, 3});

    SamplerParams k = p;
    k.top_k = 2;
    CHECK(keys(histogram(k, logits, 2000)) == std::set<int32_t>{0, 1});

    SamplerParams tp = p;
    tp.top_p = 0.75f;  // 0.5 < 0.75 <= 0.8
    auto h = histogram(tp, logits, 4000);
    CHECK(keys(h) == std::set<int32_t>{0, 1});
    CHECK(h[0] / 4000.0 == Approx(0.5 / 0.8).margin(0.04));  // renormalized

    tp.top_p = 0.85f;
    CHECK(keys(histogram(tp, logits, 4000)) == std::set<int32_t>{0, 1, 2});

    SamplerParams mp = p;
    mp.min_p = 0.25f;  // threshold 0.125
    CHECK(keys(histogram(mp, logits, 4000)) == std::set<int32_t>{0, 1, 2});
    mp.min_p = 0.5f;  // threshold 0.25
    CHECK(keys(histogram(mp, logits, 4000)) == std::set<int32_t>{0, 1});
    mp.min_p = 1.0f;
    CHECK(keys(histogram(mp, logits, 500)) == std::set<int32_t>{0});

    // Low temperature sharpens: at 0.05 the best token dominates.
    SamplerParams cold = p;
    cold.temp = 0.05f;
    auto hc = histogram(cold, logits, 1000);
    CHECK(hc[0] > 990);
}

TEST_CASE("sampling: repetition penalty (llama.cpp semantics)", "[sampling]") {
    SamplerParams p = plain(0.0f);
    p.repeat_penalty = 2.0f;
    p.repeat_last_n = 64;
    Sampler s(p);
    std::vector<float> l = {2.0f, -2.0f, 1.5f, 0.5f};
    CHECK(s.sample(l.data(), 4, {0, 1, 0}) == 2);
    CHECK(l == std::vector<float>{1.0f, -4.0f, 1.5f, 0.5f});  // once per distinct token

    p.repeat_last_n = 1;  // only the last token counts
    Sampler s1(p);
    std::vector<float> l1 = {2.0f, -2.0f, 1.5f, 0.5f};
    CHECK(s1.sample(l1.data(), 4, {0, 1}) == 0);
    CHECK(l1 == std::vector<float>{2.0f, -4.0f, 1.5f, 0.5f});
}

TEST_CASE("sampling: frequency and presence penalties (OpenAI semantics)", "[sampling]") {
    SamplerParams p = plain(0.0f);
    p.frequency_penalty = 0.5f;
    p.presence_penalty = 0.25f;
    p.repeat_last_n = 64;
    Sampler s(p);
    std::vector<float> l = {2.0f, 1.0f, 1.9f, 0.5f};
    // token 0 seen 3 times: 2 - 1.5 - 0.25; token 1 once: 1 - 0.5 - 0.25; 2 and 3 unseen
    CHECK(s.sample(l.data(), 4, {0, 1, 0, 0}) == 2);
    CHECK(l == std::vector<float>{0.25f, 0.25f, 1.9f, 0.5f});
    // With the repetition penalty too: divided first, then the counts subtracted.
    p.repeat_penalty = 2.0f;
    Sampler s2(p);
    std::vector<float> l2 = {2.0f, -1.0f};
    s2.sample(l2.data(), 2, {0, 1, 1});
    CHECK(l2 == std::vector<float>{1.0f - 0.5f - 0.25f, -2.0f - 1.0f - 0.25f});
}

TEST_CASE("sampling: logit bias", "[sampling]") {
    SamplerParams p = plain(0.0f);
    p.logit_bias = {{2, -std::numeric_limits<float>::infinity()}};
    Sampler s(p);
    std::vector<float> l = {1.0f, 2.0f, 3.0f};
    CHECK(s.sample(l.data(), 3, {}) == 1);
    p.logit_bias = {{0, 10.0f}};
    Sampler s2(p);
    l = {1.0f, 2.0f, 3.0f};
    CHECK(s2.sample(l.data(), 3, {}) == 0);
    // A banned token is never drawn.
    SamplerParams q = plain(1.0f);
    q.logit_bias = {{0, -std::numeric_limits<float>::infinity()}};
    auto h = histogram(q, from_probs({0.9f, 0.05f, 0.05f}), 1000);
    CHECK(keys(h) == std::set<int32_t>{1, 2});
    p.logit_bias = {{3, 1.0f}};
    Sampler bad(p);
    CHECK_THROWS_AS(bad.sample(l.data(), 3, {}), std::out_of_range);
}

TEST_CASE("sampling: logprobs", "[sampling]") {
    SamplerParams p = plain(0.7f);
    p.want_logprobs = true;
    p.n_logprobs = 5;
    p.logit_bias = {{4, 100.0f}};  // changes the choice, not the reported distribution
    Sampler s(p);
    std::vector<float> l = {0.1f, 2.0f, -1.0f, 0.5f, 1.0f};
    const std::vector<float> orig = l;
    int32_t id = s.sample(l.data(), 5, {});
    CHECK(id == 4);
    const auto& top = s.last_top();
    REQUIRE(top.size() == 5);
    double sum = 0;
    for (auto& t : top) sum += std::exp(double(t.logprob));
    CHECK(sum == Approx(1.0).epsilon(1e-5));
    CHECK(top[0].id == 1);
    CHECK(top[1].id == 4);
    for (size_t i = 1; i < top.size(); ++i) CHECK(top[i - 1].logprob >= top[i].logprob);
    double lse = 0;
    for (float x : orig) lse += std::exp(double(x));
    lse = std::log(lse);
    CHECK(s.last_logprob() == Approx(orig[4] - lse).epsilon(1e-5));
    CHECK(top[1].logprob == Approx(s.last_logprob()));
}

TEST_CASE("sampling: top-k on a 262144 vocabulary", "[sampling]") {
    const int n = 262144;
    auto logits = random_logits(n, 99);
    std::vector<int32_t> order(n);
    std::iota(order.begin(), order.end(), 0);
    std::sort(order.begin(), order.end(), [&](int32_t a, int32_t b) { return logits[size_t(a)] > logits[size_t(b)]; });
    std::set<int32_t> top40(order.begin(), order.begin() + 40);

    SamplerParams p = plain(2.0f);
    p.top_k = 40;
    p.seed = 5;
    Sampler s(p);
    std::set<int32_t> seen;
    // No wall-clock bound (it flakes under ctest --parallel): the draws are checked for
    // what they are, not how fast they came.
    const int draws = 50;
    for (int i = 0; i < draws; ++i) {
        std::vector<float> l = logits;
        int32_t id = s.sample(l.data(), n, nullptr, 0, i);
        CHECK(top40.count(id) == 1);
        seen.insert(id);
    }
    CHECK(seen.size() > 5);

    SamplerParams g = plain(1.0f);
    g.top_k = 1;
    Sampler s1(g);
    std::vector<float> l = logits;
    CHECK(s1.sample(l.data(), n, {}) == order[0]);
}

TEST_CASE("sampling: top-k keeps the k best, ties to the lower id, NaN last", "[sampling]") {
    const float nan = std::numeric_limits<float>::quiet_NaN();
    const std::vector<float> logits = {5, 1, 3, nan, 3, 3, 0, nan};
    SamplerParams p = plain(1e6f);  // nearly uniform over the survivors
    p.top_k = 3;
    p.seed = 11;
    Sampler s(p);
    std::set<int32_t> seen;
    for (int i = 0; i < 300; ++i) {
        std::vector<float> l = logits;
        seen.insert(s.sample(l.data(), int(l.size()), nullptr, 0, i));
    }
    CHECK(seen == std::set<int32_t>{0, 2, 4});
    // NaN ranks below every number: with k = 6 the survivors are exactly the six numbers.
    p.top_k = 6;
    Sampler s6(p);
    seen.clear();
    for (int i = 0; i < 600; ++i) {
        std::vector<float> l = logits;
        seen.insert(s6.sample(l.data(), int(l.size()), nullptr, 0, i));
    }
    CHECK(seen == std::set<int32_t>{0, 1, 2, 4, 5, 6});
}

TEST_CASE("sampling: draws are keyed by (seed, stream, position), not by how many came before", "[sampling]") {
    // Speculative decoding samples a position, may discard the result and sample that
    // position again from other logits: the draw must be a function of the key alone.
    auto logits = random_logits(3000, 21);
    SamplerParams p = plain(1.2f);
    p.seed = 77;
    std::vector<int32_t> forward, backward(64), again;
    Sampler a(p), b(p), c(p);
    for (int64_t pos = 0; pos < 64; ++pos) {
        std::vector<float> l = logits;
        forward.push_back(a.sample(l.data(), 3000, nullptr, 0, pos));
    }
    for (int64_t pos = 63; pos >= 0; --pos) {
        std::vector<float> l = logits;
        backward[size_t(pos)] = b.sample(l.data(), 3000, nullptr, 0, pos);
        std::vector<float> junk = random_logits(3000, uint64_t(pos));  // a discarded draw in between
        b.sample(junk.data(), 3000, nullptr, 0, pos);
    }
    CHECK(forward == backward);
    // The vector form keys by the history's length: the position of the token it picks.
    for (int64_t pos = 0; pos < 64; ++pos) {
        std::vector<float> l = logits;
        again.push_back(c.sample(l.data(), 3000, std::vector<int32_t>(size_t(pos), 0)));
    }
    CHECK(again == forward);
    // Another stream or seed draws differently; the keyed numbers are uniform enough.
    SamplerParams q = p;
    q.stream = 1;
    Sampler d(q);
    std::vector<int32_t> other;
    for (int64_t pos = 0; pos < 64; ++pos) {
        std::vector<float> l = logits;
        other.push_back(d.sample(l.data(), 3000, nullptr, 0, pos));
    }
    CHECK(other != forward);
    int below[4] = {0, 0, 0, 0};
    for (int64_t pos = 0; pos < 40000; ++pos) below[int(Sampler::keyed_uniform(5, 0, pos) * 4)]++;
    for (int q4 : below) CHECK(std::abs(q4 - 10000) < 400);  // 4 sigma is ~350
}

namespace {
// A constraint that bans every odd id and records what the chain chose.
class BanOdd final : public SamplerStage {
public:
    std::vector<int32_t>* accepted;
    explicit BanOdd(std::vector<int32_t>* a) : accepted(a) {}
    void apply(Candidates& c) override {
        for (int i = 1; i < c.n_vocab; i += 2) c.logits[i] = -std::numeric_limits<float>::infinity();
    }
    void accept(int32_t id) override { accepted->push_back(id); }
};
}  // namespace

TEST_CASE("sampling: a constraint stage runs before top-k and hears each chosen token", "[sampling]") {
    for (float temp : {0.0f, 0.9f}) {
        std::vector<int32_t> accepted;
        SamplerParams p = plain(temp);
        p.top_k = 3;
        Sampler s(p, std::make_unique<BanOdd>(&accepted));
        std::vector<int32_t> got;
        for (int pos = 0; pos < 50; ++pos) {
            std::vector<float> l = random_logits(64, uint64_t(pos));
            got.push_back(s.sample(l.data(), int(l.size()), nullptr, 0, pos));
            CHECK(got.back() % 2 == 0);
        }
        CHECK(accepted == got);
    }
}
