// A sampler is a chain of stages (sampler.h builds it from SamplerParams). Each stage is one
// file here, defined once: logit stages edit the full logits in place (bias, penalties, a
// grammar's mask), candidate stages narrow and weigh a candidate list (top-k, temperature,
// top-p, min-p), and a final stage picks the token (greedy, the keyed draw). A new stage is a
// file with a factory in stages.h and its row in Sampler's chain.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

namespace ls {

// What one sampling call passes from stage to stage.
struct Candidates {
    float* logits = nullptr;  // n_vocab logits, edited in place by logit stages
    int n_vocab = 0;
    const int32_t* history = nullptr;  // the sequence so far (penalties)
    size_t n_history = 0;
    int64_t pos = 0;  // where the chosen token goes: keys the draw
    // The candidate list, formed by the first candidate stage (top-k) and narrowed by the
    // later ones: ids, and once a temperature stage ran, their probabilities.
    std::vector<int32_t> ids;
    std::vector<float> p;
    bool formed = false;
    int32_t chosen = -1;  // set by the final stage
};

class SamplerStage {
public:
    virtual ~SamplerStage() = default;
    virtual void apply(Candidates& c) = 0;
    // The token the chain chose (stateful stages, e.g. a grammar, advance on it).
    virtual void accept(int32_t id) {}
};

}  // namespace ls
