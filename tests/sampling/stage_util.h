// Runs one sampler stage on given logits (tests/sampling/).
#pragma once
#include <vector>

#include "core/sampling/stages.h"

namespace ls::test {

struct StageRun {
    std::vector<float> logits;
    std::vector<int32_t> history;
    Candidates c;
    explicit StageRun(std::vector<float> l, std::vector<int32_t> h = {}, int64_t pos = 0) : logits(std::move(l)), history(std::move(h)) {
        c.logits = logits.data();
        c.n_vocab = int(logits.size());
        c.history = history.data();
        c.n_history = history.size();
        c.pos = pos;
    }
    // Candidates as a top-k stage would leave them, with probabilities `p` (for the stages
    // after the temperature).
    StageRun& with(std::vector<int32_t> ids, std::vector<float> p = {}) {
        c.ids = std::move(ids);
        c.p = std::move(p);
        c.formed = true;
        return *this;
    }
    StageRun& run(SamplerStage& s) {
        s.apply(c);
        return *this;
    }
};

}  // namespace ls::test
