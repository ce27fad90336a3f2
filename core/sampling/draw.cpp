#include "core/sampling/stages.h"

namespace ls {
namespace {

class Draw final : public SamplerStage {
public:
    Draw(uint64_t seed, uint64_t stream) : seed_(seed), stream_(stream) {}
    void apply(Candidates& c) override {
        double total = 0;
        for (float q : c.p) total += q;
        const double u = keyed_uniform(seed_, stream_, c.pos) * total;
        c.chosen = c.ids.back();  // (rounding left u at or past the last sum)
        double cum = 0;
        for (size_t i = 0; i < c.ids.size(); ++i) {
            cum += c.p[i];
            if (u < cum) {
                c.chosen = c.ids[i];
                return;
            }
        }
    }

private:
    uint64_t seed_, stream_;
};

}  // namespace

std::unique_ptr<SamplerStage> make_draw(uint64_t seed, uint64_t stream) { return std::make_unique<Draw>(seed, stream); }

}  // namespace ls
