// The generation loop shared by `run` and `chat`.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "core/sampling.h"
#include "core/session.h"
#include "core/tokenizer.h"

namespace ls::cli {

struct GenStats {
    int64_t n_prompt = 0, n_gen = 0;
    double prompt_s = 0, gen_s = 0;
};

// Evaluates `prompt` after what the session already holds for sequence 0, then samples up
// to n_predict tokens (-1: until end of generation or a full context), streaming valid
// UTF-8 to `out`. Appends the generated ids to `generated`.
GenStats generate(Session& s, const Tokenizer& tok, Sampler& sampler, const std::vector<int32_t>& prompt,
                  int64_t n_predict, std::vector<int32_t>& history, std::vector<int32_t>& generated,
                  const std::function<void(const std::string&)>& out);

SamplerParams sampler_params(const struct Options& o);

}  // namespace ls::cli
