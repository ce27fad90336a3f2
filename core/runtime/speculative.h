// Guess sources for speculative decoding (generate()): prompt lookup over the sequence's own
// tokens, or a draft model with the same vocabulary, and the rule that adapts how many guesses
// a verification step checks. Guesses only change the speed: generate() keeps a guess only
// when it equals what the sampler picks from the model's own logits at that position, and the
// logits of a position are the same bits whether it is evaluated alone or in a ubatch with
// guesses (the ubatch-invariance contract), so the tokens are those of plain decoding.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/runtime/session.h"

namespace ls {

enum class SpecMode { Off, Lookup, Draft };
SpecMode spec_mode_from_name(const std::string& name);  // "off", "lookup", "draft"; throws std::invalid_argument
const char* spec_mode_name(SpecMode m);

struct SpecParams {
    SpecMode mode = SpecMode::Lookup;
    int draft_max = 16;  // most guesses in one verification step (also capped by -ub - 1)
    int draft_min = 0;   // fewer guesses than this are not checked (plain step instead)
    int ngram_min = 2, ngram_max = 4;  // lookup: suffix lengths matched, longest first
    bool adaptive = true;  // false: every step checks draft_max guesses (tests)
};

// A guess source of the caller's: up to k guesses of what follows `tokens` then `pending`.
using GuessFn = std::function<std::vector<int32_t>(const std::vector<int32_t>& tokens, int32_t pending, int k)>;

struct SpecStats {
    int64_t n_steps = 0;     // verification steps that carried at least one guess
    int64_t n_guessed = 0;   // guesses checked
    int64_t n_accepted = 0;  // guesses the sampler confirmed
    double acceptance() const { return n_guessed ? double(n_accepted) / double(n_guessed) : 0.0; }
};

class Speculator {
public:
    // Draft mode needs `draft`: a session over a model with the target's vocabulary, whose
    // sequence `draft_seq` the speculator owns (it follows the target sequence's tokens).
    explicit Speculator(const SpecParams& p, Session* draft = nullptr, int draft_seq = 0);
    // Guesses from `source` (whatever p.mode says).
    Speculator(const SpecParams& p, GuessFn source);

    // How many guesses the next step may check (0: guessing does not pay at present).
    int budget();
    // Up to `k` guesses of the tokens that follow `tokens` then `pending` (sampled, not yet
    // evaluated). May return fewer, or none.
    std::vector<int32_t> guess(const std::vector<int32_t>& tokens, int32_t pending, int k);
    // The outcome of a verification step: `accepted` of `guessed` guesses confirmed, in
    // `seconds` (< 0: not timed). A step that produced fewer tokens per second than plain steps
    // (plain()) counts as a miss, however many guesses it kept.
    void record(int guessed, int accepted, double seconds = -1);
    // The time of a plain step (no guesses): what a verification step must beat.
    void plain(double seconds);

    const SpecParams& params() const { return p_; }
    const SpecStats& stats() const { return stats_; }
    void reset_stats() { stats_ = {}; }

private:
    SpecParams p_;
    Session* draft_;
    int draft_seq_;
    GuessFn source_;
    SpecStats stats_;
    int cap_;              // guesses the next step may check
    int misses_ = 0;       // consecutive steps with no guess confirmed
    int pause_ = 0;        // steps left without guessing
    int backoff_ = 4;      // the next pause's length
    double plain_s_ = -1;  // moving average of a plain step's time
    std::vector<int32_t> ctx_;
};

// After a verification step that put the sampled token and its guesses at positions start..,
// cuts sequence `seq` back to `keep` tokens, the ones plain decoding would hold: attention-only
// models truncate (seq_rm; guesses within one ubatch stay restorable in a windowed ring); a
// recurrent state returns to the step checkpoint taken at `start` (Session::checkpoint_step)
// and the kept tokens are evaluated again, without logits.
void spec_roll_back(Session& s, int seq, int64_t keep, int64_t start);

// Draft mode: the draft model must speak the target's vocabulary (the same size and the same
// token texts). Throws std::invalid_argument naming the first difference.
void check_draft_vocabulary(const Model& target, const Model& draft);

}  // namespace ls
