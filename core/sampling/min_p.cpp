#include <algorithm>

#include "core/sampling/stages.h"

namespace ls {
namespace {

class MinP final : public SamplerStage {
public:
    explicit MinP(float min_p) : min_p_(min_p) {}
    void apply(Candidates& c) override {
        if (c.ids.empty()) return;
        const float thr = min_p_ * *std::max_element(c.p.begin(), c.p.end());
        size_t w = 0;
        for (size_t i = 0; i < c.ids.size(); ++i)
            if (c.p[i] >= thr) c.ids[w] = c.ids[i], c.p[w] = c.p[i], ++w;
        c.ids.resize(w);
        c.p.resize(w);
    }

private:
    float min_p_;
};

}  // namespace

std::unique_ptr<SamplerStage> make_min_p(float min_p) { return std::make_unique<MinP>(min_p); }

}  // namespace ls
