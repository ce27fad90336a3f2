#include <stdexcept>
#include <string>

#include "core/sampling/stages.h"

namespace ls {
namespace {

class LogitBias final : public SamplerStage {
public:
    explicit LogitBias(std::vector<std::pair<int32_t, float>> b) : bias_(std::move(b)) {}
    void apply(Candidates& c) override {
        for (const auto& [id, bias] : bias_) {
            if (id < 0 || id >= c.n_vocab)
                throw std::out_of_range("logit_bias: token id " + std::to_string(id) + " out of range [0, " +
                                        std::to_string(c.n_vocab) + ")");
            c.logits[id] += bias;
        }
    }

private:
    std::vector<std::pair<int32_t, float>> bias_;
};

}  // namespace

std::unique_ptr<SamplerStage> make_logit_bias(std::vector<std::pair<int32_t, float>> bias) {
    return std::make_unique<LogitBias>(std::move(bias));
}

}  // namespace ls
