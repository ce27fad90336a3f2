// Token sampling: a chain of stages (stage.h, one file each) built from SamplerParams: logit
// bias, repetition / frequency / presence penalties, an optional constraint (a grammar's
// mask), then greedy, or top-k, temperature, top-p, min-p and the keyed draw. Deterministic
// for a given seed and input: the draw is keyed by (seed, stream, position) (keyed.cpp), so
// speculative decoding, which samples positions again after a wrong guess, gives the tokens
// of plain decoding.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "core/sampling/stage.h"
#include "core/sampling/stages.h"

namespace ls {

struct SamplerParams {
    float temp = 0.8f;  // <= 0: greedy (argmax, ties -> lowest id)
    int top_k = 40;     // <= 0 or >= n_vocab: off
    float top_p = 0.95f;  // >= 1: off
    float min_p = 0.05f;  // <= 0: off
    float repeat_penalty = 1.0f;  // 1: off
    // OpenAI's penalties: logit -= count * frequency_penalty + (count > 0) * presence_penalty,
    // count = the token's occurrences in the penalized history (0: off).
    float frequency_penalty = 0.0f, presence_penalty = 0.0f;
    int repeat_last_n = 64;       // how many of the latest history tokens are penalized (-1: all)
    uint64_t seed = 0;
    // The sequence's identity in the draw key (seed, stream, position). Not the KV slot: a
    // request's draws must not depend on which slot serves it.
    uint64_t stream = 0;
    std::vector<std::pair<int32_t, float>> logit_bias;  // added to the logit; -inf bans a token
    bool want_logprobs = false;
    int n_logprobs = 0;  // how many top alternatives to report
    // Constrained output: the text must follow this grammar (with `grammar_vocab`, the token
    // texts of the model's vocabulary: grammar_vocab() in core/runtime).
    std::shared_ptr<const grammar::Grammar> grammar;
    std::shared_ptr<const grammar::TokenMask> grammar_vocab;
};

struct TokenLogprob {
    int32_t id;
    float logprob;
};

class Sampler {
public:
    // `constraint`: a logit stage run after the bias and penalties, told of each chosen token
    // (a grammar: it bans what the grammar does not allow next).
    explicit Sampler(SamplerParams p = {}, std::unique_ptr<SamplerStage> constraint = nullptr);

    // Picks the next token. `logits` (n_vocab floats) is modified in place (bias, penalty).
    // `history` is the token sequence so far (prompt + generated), for the penalty; the token
    // chosen goes at position history.size(), which keys the draw.
    int32_t sample(float* logits, int n_vocab, const std::vector<int32_t>& history) {
        return sample(logits, n_vocab, history.data(), history.size(), int64_t(history.size()));
    }
    // The same with the history as n_history ids at `history` and the draw keyed by `pos`.
    int32_t sample(float* logits, int n_vocab, const int32_t* history, size_t n_history, int64_t pos);
    // The uniform number in [0, 1) that draws position `pos` (53 random bits).
    static double keyed_uniform(uint64_t seed, uint64_t stream, int64_t pos) { return ls::keyed_uniform(seed, stream, pos); }

    // With want_logprobs: log-softmax of the logits as given to sample() (before bias and
    // penalty) for the chosen token, and the n_logprobs most likely tokens (descending).
    float last_logprob() const { return last_logprob_; }
    const std::vector<TokenLogprob>& last_top() const { return last_top_; }

    const SamplerParams& params() const { return p_; }

private:
    SamplerParams p_;
    std::vector<std::unique_ptr<SamplerStage>> chain_;
    Candidates c_;
    std::vector<float> orig_;  // copy of the input logits for logprobs
    float last_logprob_ = 0.0f;
    std::vector<TokenLogprob> last_top_;
    void logprobs(int n, int32_t chosen);
};

}  // namespace ls
