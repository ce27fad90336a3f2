#include <catch2/catch.hpp>
#include <cmath>
#include <limits>
#include <random>

#include "core/grammar/matcher.h"
#include "core/grammar/token_mask.h"
#include "core/sampling/sampler.h"

using namespace ls;

namespace {

// A small vocabulary: letters, braces, multi-byte and partial UTF-8 pieces, an EOG token.
std::shared_ptr<const grammar::TokenMask> small_vocab() {
    std::vector<std::string> t = {"{", "}", "a", "b", "ab", "ba", "{a", "b}", "x", "é", "\xc3", "\xa9", "aa", "", "<eos>", "}}"};
    std::vector<bool> eog(t.size()), special(t.size());
    eog[14] = true;
    special[14] = true;
    return std::make_shared<grammar::TokenMask>(t, eog, special, 16);
}

// The reference: every step, the full mask (no shortcut), then the chain as usual.
class FullBan final : public SamplerStage {
public:
    FullBan(std::shared_ptr<const grammar::Grammar> g, std::shared_ptr<const grammar::TokenMask> v) : v_(v), m_(std::move(g), v) {}
    void apply(Candidates& c) override {
        std::vector<uint32_t> bits(v_->mask_words());
        v_->fill_mask(m_, bits.data());
        for (int i = 0; i < c.n_vocab; ++i)
            if (!grammar::TokenMask::test(bits.data(), i)) c.logits[i] = -std::numeric_limits<float>::infinity();
    }
    void accept(int32_t id) override { REQUIRE(m_.accept_token(id)); }

private:
    std::shared_ptr<const grammar::TokenMask> v_;
    grammar::Matcher m_;
};

}  // namespace

TEST_CASE("sampler stage grammar: the same tokens as a full ban at every step, greedy and sampled, any top-k", "[sampling][grammar]") {
    const auto vocab = small_vocab();
    const auto g = grammar::Grammar::parse(R"(root ::= "{" ("a" | "b" | "é")* "}")");
    std::mt19937_64 rng(5);
    std::normal_distribution<float> d(0.0f, 2.0f);
    int full_paths = 0;
    for (int trial = 0; trial < 300; ++trial) {
        SamplerParams p;
        p.temp = trial % 4 == 0 ? 0.0f : 0.8f;
        p.top_k = std::vector<int>{0, 1, 3, 8, 40}[size_t(trial % 5)];
        p.seed = uint64_t(trial);
        p.grammar = g;
        p.grammar_vocab = vocab;
        SamplerParams q = p;
        q.grammar = nullptr;
        Sampler fast(p), ref(q, std::make_unique<FullBan>(g, vocab));
        for (int pos = 0; pos < 12; ++pos) {
            std::vector<float> l(16);
            for (float& x : l) x = d(rng);
            if (pos > 3) l[1] += 3.0f;  // sometimes the model wants to close
            std::vector<float> a = l, b = l;
            const int32_t x = fast.sample(a.data(), 16, nullptr, 0, pos);
            const int32_t y = ref.sample(b.data(), 16, nullptr, 0, pos);
            REQUIRE(x == y);
            full_paths += a != l;
            if (x == 14) break;  // end of generation: the grammar had ended
        }
    }
    CHECK(full_paths > 0);  // both paths ran
}

TEST_CASE("sampler stage grammar: no allowed token left is an error, not a banned token", "[sampling][grammar]") {
    const auto vocab = small_vocab();
    SamplerParams p;
    p.temp = 0.0f;
    p.grammar = grammar::Grammar::parse(R"(root ::= "x")");
    p.grammar_vocab = vocab;
    p.logit_bias = {{8, -std::numeric_limits<float>::infinity()}};
    Sampler s(p);
    std::vector<float> l(16, 0.0f);
    CHECK_THROWS_WITH(s.sample(l.data(), 16, nullptr, 0, 0), Catch::Contains("banned"));
    SamplerParams q = p;
    q.logit_bias.clear();
    Sampler t(q);
    std::vector<float> m(16, 0.0f);
    CHECK(t.sample(m.data(), 16, nullptr, 0, 0) == 8);
    std::vector<float> e(16, 0.0f);
    CHECK(t.sample(e.data(), 16, nullptr, 0, 1) == 14);  // only the end is left
    CHECK_THROWS_AS(Sampler(SamplerParams{.grammar = q.grammar}), std::invalid_argument);
}
