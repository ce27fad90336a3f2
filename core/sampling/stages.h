// The stage factories, one per file of this folder (stage.h says how a chain runs them).
#pragma once
#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "core/sampling/stage.h"

namespace ls::grammar {
class Grammar;
class TokenMask;
}  // namespace ls::grammar

namespace ls {

// logit_bias.cpp: adds each (id, bias) to the logit; -inf bans a token. An id outside the
// vocabulary is an error naming it.
std::unique_ptr<SamplerStage> make_logit_bias(std::vector<std::pair<int32_t, float>> bias);
// penalties.cpp: over the last `last_n` history tokens (-1: all), the repetition penalty once
// per distinct token (llama.cpp's: a positive logit divided, a negative one multiplied), and
// OpenAI's logit -= count * frequency + (count > 0) * presence.
std::unique_ptr<SamplerStage> make_penalties(float repeat, float frequency, float presence, int last_n);
// greedy.cpp: the first (lowest id) maximum of the logits.
std::unique_ptr<SamplerStage> make_greedy();
// top_k.cpp: forms the candidates: the k best logits in order (larger first, NaN last, ties to
// the lower id); k <= 0 or >= n_vocab: every id, in id order.
// A stage before it may form the candidates itself (c.formed): top-k then keeps them.
std::unique_ptr<SamplerStage> make_top_k(int k);
// The k (< n) best ids in that order (top_k.cpp): what make_top_k forms.
void top_k_ids(const float* logits, int n, size_t k, std::vector<int32_t>& out);
// temperature.cpp: the candidates' probabilities, softmax of logit / temp (temp > 0); when no
// candidate is finite, all the weight goes to the lowest id.
std::unique_ptr<SamplerStage> make_temperature(float temp);
// top_p.cpp: the most likely candidates (ties to the lower id) whose mass reaches p, in that order.
std::unique_ptr<SamplerStage> make_top_p(float p);
// min_p.cpp: candidates at least min_p times as likely as the most likely one, order kept.
std::unique_ptr<SamplerStage> make_min_p(float min_p);
// draw.cpp: the keyed draw: the uniform number keyed_uniform(seed, stream, pos) picks a
// candidate by cumulative probability.
std::unique_ptr<SamplerStage> make_draw(uint64_t seed, uint64_t stream);
// grammar.cpp: bans what the grammar does not allow next (grammar/matcher.h), then follows
// each chosen token. `top_k` and `greedy` are the chain's: when the tokens that the next
// stages would pick from without the ban are all allowed, the ban changes nothing and no full
// mask is computed (the usual case: a model mostly writes what the grammar allows). A state
// where no token is allowed, or every allowed one is banned by the bias, is an error.
std::unique_ptr<SamplerStage> make_grammar(std::shared_ptr<const grammar::Grammar> g, std::shared_ptr<const grammar::TokenMask> vocab,
                                           int top_k, bool greedy);
// keyed.cpp: the uniform number in [0, 1) that draws position `pos` (53 random bits).
double keyed_uniform(uint64_t seed, uint64_t stream, int64_t pos);

}  // namespace ls
