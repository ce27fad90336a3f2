#include <algorithm>
#include <numeric>

#include "core/sampling/stages.h"

namespace ls {
namespace {

class TopP final : public SamplerStage {
public:
    explicit TopP(float p) : p_(p) {}
    void apply(Candidates& c) override {
        const size_t m = c.ids.size();
        order_.resize(m);
        std::iota(order_.begin(), order_.end(), size_t(0));
        std::sort(order_.begin(), order_.end(), [&](size_t a, size_t b) {
            return c.p[a] > c.p[b] || (c.p[a] == c.p[b] && c.ids[a] < c.ids[b]);
        });
        ids_.resize(m);
        ps_.resize(m);
        for (size_t i = 0; i < m; ++i) ids_[i] = c.ids[order_[i]], ps_[i] = c.p[order_[i]];
        double cum = 0;
        size_t keep = m;
        for (size_t i = 0; i < m; ++i) {
            cum += ps_[i];
            if (cum >= p_) {
                keep = i + 1;
                break;
            }
        }
        ids_.resize(keep);
        ps_.resize(keep);
        c.ids.swap(ids_);
        c.p.swap(ps_);
    }

private:
    float p_;
    std::vector<size_t> order_;
    std::vector<int32_t> ids_;
    std::vector<float> ps_;
};

}  // namespace

std::unique_ptr<SamplerStage> make_top_p(float p) { return std::make_unique<TopP>(p); }

}  // namespace ls
