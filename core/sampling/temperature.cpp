#include <algorithm>
#include <cmath>
#include <limits>

#include "core/sampling/stages.h"

namespace ls {
namespace {

class Temperature final : public SamplerStage {
public:
    explicit Temperature(float t) : t_(t) {}
    void apply(Candidates& c) override {
        float mx = -std::numeric_limits<float>::infinity();
        for (int32_t id : c.ids) mx = std::max(mx, c.logits[id]);
        c.p.resize(c.ids.size());
        if (!std::isfinite(mx)) {  // everything banned (or NaN): fall back to the lowest id
            std::fill(c.p.begin(), c.p.end(), 0.0f);
            c.p[size_t(std::min_element(c.ids.begin(), c.ids.end()) - c.ids.begin())] = 1.0f;
            return;
        }
        double sum = 0;
        for (size_t i = 0; i < c.ids.size(); ++i) {
            const float e = std::exp((c.logits[c.ids[i]] - mx) / t_);
            c.p[i] = e;
            sum += e;
        }
        for (float& q : c.p) q = float(q / sum);
    }

private:
    float t_;
};

}  // namespace

std::unique_ptr<SamplerStage> make_temperature(float temp) { return std::make_unique<Temperature>(temp); }

}  // namespace ls
