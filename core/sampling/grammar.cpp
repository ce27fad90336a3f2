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
    // Whether the tokens the next stages would look at are all allowed without a ban: then the
    // ban would change nothing they do. Greedy looks at the first maximum; top-k at its k best
    // (which a ban would only replace if one of them went); top-k off looks at every token.
    bool fast(Candidates& c) {
        if (greedy_) {
            int32_t best = 0;
            for (int i = 1; i < c.n_vocab; ++i)
                if (c.logits[i] > c.logits[best]) best = i;
            return c.logits[best] > -std::numeric_limits<float>::infinity() && vocab_->allows(m_, best);
        }
        if (top_k_ <= 0 || top_k_ >= c.n_vocab) return false;
        top_k_ids(c.logits, c.n_vocab, size_t(top_k_), top_);
        for (int32_t id : top_)
            if (!(c.logits[id] > -std::numeric_limits<float>::infinity()) || !vocab_->allows(m_, id)) return false;
        c.ids.swap(top_);  // the top-k stage keeps them
        c.formed = true;
        return true;
    }

    std::shared_ptr<const grammar::TokenMask> vocab_;
    grammar::Matcher m_;
    int top_k_;
    bool greedy_;
    std::vector<uint32_t> bits_;
    std::vector<int32_t> top_;
};

}  // namespace

std::unique_ptr<SamplerStage> make_grammar(std::shared_ptr<const grammar::Grammar> g, std::shared_ptr<const grammar::TokenMask> vocab,
                                           int top_k, bool greedy) {
    return std::make_unique<GrammarStage>(std::move(g), std::move(vocab), top_k, greedy);
}

}  // namespace ls
