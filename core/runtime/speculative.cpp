#include "core/runtime/speculative.h"

#include <algorithm>
#include <stdexcept>

namespace ls {

SpecMode spec_mode_from_name(const std::string& name) {
    if (name == "off") return SpecMode::Off;
    if (name == "lookup") return SpecMode::Lookup;
    if (name == "draft") return SpecMode::Draft;
    throw std::invalid_argument("speculation must be off, lookup or draft; got '" + name + "'");
}

const char* spec_mode_name(SpecMode m) {
    switch (m) {
        case SpecMode::Off: return "off";
        case SpecMode::Lookup: return "lookup";
        case SpecMode::Draft: return "draft";
    }
    return "?";
}

Speculator::Speculator(const SpecParams& p, Session* draft, int draft_seq) : p_(p), draft_(draft), draft_seq_(draft_seq) {
    if (p_.draft_max < 0) throw std::invalid_argument("draft-max must be >= 0, got " + std::to_string(p_.draft_max));
    if (p_.draft_min < 0) throw std::invalid_argument("draft-min must be >= 0, got " + std::to_string(p_.draft_min));
    if (p_.draft_min > p_.draft_max)
        throw std::invalid_argument("draft-min (" + std::to_string(p_.draft_min) + ") must not exceed draft-max (" +
                                    std::to_string(p_.draft_max) + ")");
    if (p_.ngram_min < 1 || p_.ngram_max < p_.ngram_min) throw std::invalid_argument("lookup n-gram sizes must satisfy 1 <= min <= max");
    if (p_.mode == SpecMode::Draft && !draft_) throw std::invalid_argument("draft speculation needs a draft model");
    // Start small: a first step costs little, and a run of confirmed guesses grows the cap.
    cap_ = std::min(p_.draft_max, 4);
}

Speculator::Speculator(const SpecParams& p, GuessFn source) : Speculator([&] {
    SpecParams q = p;
    q.mode = SpecMode::Lookup;  // checked like lookup; the source replaces it
    return q;
}()) {
    source_ = std::move(source);
}

int Speculator::budget() {
    if (p_.mode == SpecMode::Off || p_.draft_max == 0) return 0;
    if (!p_.adaptive) return p_.draft_max;
    if (pause_ > 0) {
        --pause_;
        return 0;
    }
    return std::max(cap_, p_.draft_min);
}

// The cap follows the recent acceptance: every guess confirmed doubles it (up to draft_max);
// a rejection sets it to one more than the guesses that were confirmed. A step that confirmed
// nothing, or (timed) gave less than 1.1x the tokens per second of a plain step, is a miss: two misses in
// a row pause guessing for 4, 8, ... up to 128 steps; a step that paid ends the backoff. On a
// machine where a wider ubatch costs nearly what one token does (a GPU) every kept guess pays;
// on a small CPU, where each extra row costs most of a step, only long runs of kept guesses do.
void Speculator::record(int guessed, int accepted, double seconds) {
    if (guessed <= 0) return;
    ++stats_.n_steps;
    stats_.n_guessed += guessed;
    stats_.n_accepted += accepted;
    if (accepted == guessed) cap_ = std::min(p_.draft_max, std::max(cap_, guessed) * 2);
    else cap_ = std::max(1, std::min(p_.draft_max, accepted + 1));
    // (Timed: at least 10% more tokens per second than plain steps; a step that merely breaks
    // even gains nothing and risks a loss on the next.)
    const bool paid = accepted > 0 && !(seconds > 0 && plain_s_ > 0 && double(accepted + 1) * plain_s_ < 1.1 * seconds);
    if (paid) {
        misses_ = 0;
        backoff_ = 4;
    } else if (++misses_ >= 2) {
        misses_ = 0;
        pause_ = backoff_;
        backoff_ = std::min(backoff_ * 2, 128);
    }
}

void Speculator::plain(double seconds) { plain_s_ = plain_s_ < 0 ? seconds : 0.9 * plain_s_ + 0.1 * seconds; }

std::vector<int32_t> Speculator::guess(const std::vector<int32_t>& tokens, int32_t pending, int k) {
    std::vector<int32_t> out;
    if (k <= 0) return out;
    if (source_) {
        out = source_(tokens, pending, k);
        if (out.size() > size_t(k)) out.resize(size_t(k));
        return out;
    }
    ctx_.assign(tokens.begin(), tokens.end());
    ctx_.push_back(pending);
    if (p_.mode == SpecMode::Lookup) {
        // The latest earlier occurrence of the longest suffix (ngram_max down to ngram_min
        // tokens) that occurred before; the guesses are what followed it. The copy reads on
        // into its own guesses, so a period shorter than k repeats.
        const size_t n = ctx_.size();
        for (int len = p_.ngram_max; len >= p_.ngram_min && out.empty(); --len) {
            const size_t L = size_t(len);
            if (n < L + 1) continue;
            const int32_t* suf = ctx_.data() + (n - L);
            for (size_t i = n - L; i-- > 0;) {  // candidate starts, latest first (i + L <= n - 1)
                if (!std::equal(suf, suf + L, ctx_.data() + i)) continue;
                for (size_t j = i + L; out.size() < size_t(k); ++j) {
                    const int32_t t = ctx_[j];
                    if (t < 0) break;  // an image's tag: no token to guess
                    out.push_back(t);
                    ctx_.push_back(t);
                }
                break;
            }
        }
        return out;
    }
    if (p_.mode == SpecMode::Draft) {
        // The draft sequence follows the target's tokens (keeping what it already holds), then
        // greedy steps of the draft model. Its own rollbacks go through reuse_prefix.
        Session& d = *draft_;
        // A sequence holding an image (its tokens' negative tags): the draft model cannot read it.
        if (std::any_of(ctx_.begin(), ctx_.end(), [](int32_t t) { return t < 0; })) return out;
        const int64_t room = d.params().n_ctx - int64_t(ctx_.size());
        if (room < 1) return out;
        k = int(std::min<int64_t>(k, room));
        const int64_t kept = d.reuse_prefix(draft_seq_, ctx_);
        std::vector<float> logits = d.eval({ctx_.begin() + kept, ctx_.end()}, -1, draft_seq_);
        // A recurrent draft model can return here next time (the target keeps at least these).
        d.checkpoint(draft_seq_);
        const int64_t nv = d.n_vocab();
        for (int i = 0; i < k; ++i) {
            const int32_t t = int32_t(std::max_element(logits.begin(), logits.begin() + nv) - logits.begin());
            out.push_back(t);
            if (i + 1 < k) logits = d.eval({t}, -1, draft_seq_);
        }
    }
    return out;
}

void spec_roll_back(Session& s, int seq, int64_t keep, int64_t start) {
    if (s.seq_len(seq) == keep || s.seq_rm(seq, keep)) return;
    const std::vector<int32_t> have(s.seq_tokens(seq).begin(), s.seq_tokens(seq).begin() + keep);
    std::vector<int32_t> redo;
    if (s.seq_rm(seq, start)) {
        redo.assign(have.begin() + start, have.end());
    } else {
        // Neither point is restorable (cannot happen while guesses stay within one ubatch):
        // evaluate the sequence again from the start.
        redo = have;
        s.seq_rm(seq, 0);
    }
    Batch b;
    for (size_t i = 0; i < redo.size(); ++i) b.add(redo[i], seq, int32_t(s.seq_len(seq) + int64_t(i)), false);
    s.decode(b);
}

void check_draft_vocabulary(const Model& target, const Model& draft) {
    const int64_t a = target.hparams().n_vocab, b = draft.hparams().n_vocab;
    if (a != b)
        throw std::invalid_argument("the draft model's vocabulary has " + std::to_string(b) + " tokens, the model's " +
                                    std::to_string(a) + ": a draft model must share the model's vocabulary");
    const auto& ta = target.gguf().get_string_array("tokenizer.ggml.tokens");
    const auto& tb = draft.gguf().get_string_array("tokenizer.ggml.tokens");
    if (ta.size() != tb.size())
        throw std::invalid_argument("the draft model's token list has " + std::to_string(tb.size()) + " entries, the model's " +
                                    std::to_string(ta.size()) + ": a draft model must share the model's vocabulary");
    for (size_t i = 0; i < ta.size(); ++i)
        if (ta[i] != tb[i])
            throw std::invalid_argument("the draft model's token " + std::to_string(i) + " is '" + tb[i] + "', the model's '" +
                                        ta[i] + "': a draft model must share the model's vocabulary");
}

}  // namespace ls
