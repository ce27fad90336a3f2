#include "core/sampling/stages.h"

namespace ls {
namespace {

class Greedy final : public SamplerStage {
public:
    void apply(Candidates& c) override {
        if (c.formed && !c.ids.empty()) {  // (a constraint stage found the best allowed token: grammar.cpp)
            c.chosen = c.ids[0];
            return;
        }
        int32_t best = 0;
        // Strictly greater: ties go to the lower id; a NaN never wins over a number.
        for (int i = 1; i < c.n_vocab; ++i)
            if (c.logits[i] > c.logits[best]) best = i;
        c.chosen = best;
    }
};

}  // namespace

std::unique_ptr<SamplerStage> make_greedy() { return std::make_unique<Greedy>(); }

}  // namespace ls
