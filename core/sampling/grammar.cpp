#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

#include "core/grammar/matcher.h"
#include "core/grammar/token_mask.h"
#include "core/sampling/stages.h"

namespace ls {
namespace {

class GrammarStage final : public SamplerStage {
public:
    GrammarStage(std::shared_ptr<const grammar::Grammar> g, std::shared_ptr<const grammar::TokenMask> vocab, int top_k, bool greedy)
        : vocab_(vocab), m_(std::move(g), vocab), top_k_(top_k), greedy_(greedy) {}

    void apply(Candidates& c) override {
        if (c.n_vocab != vocab_->n_vocab())
            throw std::invalid_argument("grammar: the logits have " + std::to_string(c.n_vocab) + " entries, the vocabulary " +
                                        std::to_string(vocab_->n_vocab()));
        if (fast(c)) return;
        // The full ban: every token the grammar does not allow goes to -inf.
        bits_.resize(vocab_->mask_words());
        vocab_->fill_mask(m_, bits_.data());
        bool any = false;
        for (int32_t id = 0; id < c.n_vocab; ++id) {
            if (!grammar::TokenMask::test(bits_.data(), id))
                c.logits[id] = -std::numeric_limits<float>::infinity();
            else
                any = any || c.logits[id] > -std::numeric_limits<float>::infinity();
        }
        if (!any)
            throw std::runtime_error(m_.can_continue() || m_.is_accepting()
                                         ? "grammar: every token the grammar allows here is banned (logit_bias)"
                                         : "grammar: no token can continue the text (the grammar allows nothing here)");
    }

    void accept(int32_t id) override {
        if (!m_.accept_token(id)) throw std::runtime_error("grammar: token " + std::to_string(id) + " does not continue the text");
    }

private:
    // The candidates the next stages would form under the ban, found without it: the k best
    // allowed tokens (greedy: the best one) are the first k allowed ones in the order of
    // top-k (larger logit first, ties to the lower id). The best m tokens are checked one by
    // one (allows() walks a token's bytes only), m growing while fewer than k of them are
    // allowed; only a grammar that allows few of the likely tokens needs the full mask. Top-k
    // off looks at every token: the full mask.
    bool fast(Candidates& c) {
        const int n = c.n_vocab;
        const size_t want = greedy_ ? 1 : size_t(top_k_);
        if (!greedy_ && (top_k_ <= 0 || top_k_ >= n)) return false;
        constexpr float kNone = -std::numeric_limits<float>::infinity();
        for (size_t m = std::max<size_t>(4 * want, 64);; m *= 4) {
            const bool all = m >= size_t(n);
            if (all) m = size_t(n);
            top_k_ids(c.logits, n, m, top_);
            ok_.clear();
            for (int32_t id : top_) {
                if (!(c.logits[id] > kNone)) return false;  // the rest are banned or NaN: let the full ban decide
                if (vocab_->allows(m_, id)) ok_.push_back(id);
                if (ok_.size() == want) {
                    c.ids.swap(ok_);  // the top-k (or greedy) stage keeps them
                    c.formed = true;
                    return true;
                }
            }
            if (all || m >= kMaxChecked) return false;
        }
    }
    static constexpr size_t kMaxChecked = 16384;

    std::shared_ptr<const grammar::TokenMask> vocab_;
    grammar::Matcher m_;
    int top_k_;
    bool greedy_;
    std::vector<uint32_t> bits_;
    std::vector<int32_t> top_, ok_;
};

}  // namespace

std::unique_ptr<SamplerStage> make_grammar(std::shared_ptr<const grammar::Grammar> g, std::shared_ptr<const grammar::TokenMask> vocab,
                                           int top_k, bool greedy) {
    return std::make_unique<GrammarStage>(std::move(g), std::move(vocab), top_k, greedy);
}

}  // namespace ls
