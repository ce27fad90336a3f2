// Token sampling: logit bias, repetition / frequency / presence penalties, top-k, temperature, top-p, min-p, and a
// seeded draw. Deterministic for a given seed and input.
#pragma once
#include <cstdint>
#include <random>
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
    // `history` is the token sequence so far (prompt + generated), for the penalty.
    int32_t sample(float* logits, int n_vocab, const std::vector<int32_t>& history);

    // With want_logprobs: log-softmax of the logits as given to sample() (before bias and
    // penalty) for the chosen token, and the n_logprobs most likely tokens (descending).
    float last_logprob() const { return last_logprob_; }
    const std::vector<TokenLogprob>& last_top() const { return last_top_; }

    void reseed(uint64_t seed) { rng_.seed(seed); }
    const SamplerParams& params() const { return p_; }

private:
    double uniform();  // [0, 1) from 53 random bits
    SamplerParams p_;
    std::mt19937_64 rng_;
    std::vector<int32_t> idx_;  // candidate ids
    std::vector<float> prob_;   // their probabilities
    std::vector<float> orig_;   // copy of the input logits for logprobs
    std::vector<int32_t> seen_;
    float last_logprob_ = 0.0f;
    std::vector<TokenLogprob> last_top_;
};

}  // namespace ls
