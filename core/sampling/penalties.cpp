#include <algorithm>

#include "core/sampling/stages.h"

namespace ls {
namespace {

class Penalties final : public SamplerStage {
public:
    Penalties(float repeat, float frequency, float presence, int last_n)
        : repeat_(repeat), frequency_(frequency), presence_(presence), last_n_(last_n) {}
    void apply(Candidates& c) override {
        if (last_n_ == 0 || c.n_history == 0) return;
        size_t from = 0;
        if (last_n_ > 0 && c.n_history > size_t(last_n_)) from = c.n_history - size_t(last_n_);
        // Sorted, so each distinct token is visited once with its count (a map per call
        // allocated more than the penalties cost).
        seen_.assign(c.history + from, c.history + c.n_history);
        std::sort(seen_.begin(), seen_.end());
        for (size_t i = 0; i < seen_.size();) {
            const int32_t id = seen_[i];
            size_t j = i;
            while (j < seen_.size() && seen_[j] == id) ++j;
            const float count = float(j - i);
            i = j;
            if (id < 0 || id >= c.n_vocab) continue;
            float& l = c.logits[id];
            if (repeat_ != 1.0f) l = l > 0 ? l / repeat_ : l * repeat_;
            l -= count * frequency_ + presence_;
        }
    }

private:
    float repeat_, frequency_, presence_;
    int last_n_;
    std::vector<int32_t> seen_;
};

}  // namespace

std::unique_ptr<SamplerStage> make_penalties(float repeat, float frequency, float presence, int last_n) {
    return std::make_unique<Penalties>(repeat, frequency, presence, last_n);
}

}  // namespace ls
