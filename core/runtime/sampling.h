// Token sampling: logit bias, repetition / frequency / presence penalties, top-k, temperature, top-p, min-p, and a
// seeded draw. Deterministic for a given seed and input.
//
// The draw is keyed, not streamed: the uniform number that picks the token at position `pos`
// is a hash of (seed, stream, pos), so it does not depend on how many draws came before or in
// which order positions were sampled. Speculative decoding samples a position, throws the
// result away when a guess was wrong and samples the next position again from other logits;
// with keyed draws that gives the same tokens as plain decoding, token for token.
#pragma once
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

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
};

struct TokenLogprob {
    int32_t id;
    float logprob;
};

class Sampler {
public:
    explicit Sampler(SamplerParams p = {});

    // Picks the next token. `logits` (n_vocab floats) is modified in place (bias, penalty).
    // `history` is the token sequence so far (prompt + generated), for the penalty; the token
    // chosen goes at position history.size(), which keys the draw.
    int32_t sample(float* logits, int n_vocab, const std::vector<int32_t>& history) {
        return sample(logits, n_vocab, history.data(), history.size(), int64_t(history.size()));
    }
    // The same with the history as n_history ids at `history` and the draw keyed by `pos`.
    int32_t sample(float* logits, int n_vocab, const int32_t* history, size_t n_history, int64_t pos);
    // The uniform number in [0, 1) that draws position `pos` (53 random bits).
    static double keyed_uniform(uint64_t seed, uint64_t stream, int64_t pos);

    // With want_logprobs: log-softmax of the logits as given to sample() (before bias and
    // penalty) for the chosen token, and the n_logprobs most likely tokens (descending).
    float last_logprob() const { return last_logprob_; }
    const std::vector<TokenLogprob>& last_top() const { return last_top_; }

    void reseed(uint64_t seed) { p_.seed = seed; }
    const SamplerParams& params() const { return p_; }

private:
    SamplerParams p_;
    std::vector<int32_t> idx_;  // candidate ids
    std::vector<float> prob_;   // their probabilities
    std::vector<float> orig_;   // copy of the input logits for logprobs
    std::vector<int32_t> seen_;
    float last_logprob_ = 0.0f;
    std::vector<TokenLogprob> last_top_;
};

}  // namespace ls
