#include <catch2/catch.hpp>

#include "tests/sampling/stage_util.h"

using namespace ls;
using ls::test::StageRun;

TEST_CASE("sampler stage top_p: the most likely candidates whose mass reaches p, in that order", "[sampling]") {
    StageRun r({0, 0, 0, 0});
    r.with({0, 1, 2, 3}, {0.1f, 0.4f, 0.3f, 0.2f}).run(*make_top_p(0.65f));
    CHECK(r.c.ids == std::vector<int32_t>{1, 2});
    CHECK(r.c.p == std::vector<float>{0.4f, 0.3f});
    // Equal probabilities: the lower id first.
    StageRun t({0, 0, 0});
    t.with({2, 1, 0}, {0.25f, 0.5f, 0.25f}).run(*make_top_p(0.6f));
    CHECK(t.c.ids == std::vector<int32_t>{1, 0});
    // p never reached (rounding): every candidate stays.
    StageRun all({0, 0});
    all.with({0, 1}, {0.5f, 0.4f}).run(*make_top_p(0.99f));
    CHECK(all.c.ids.size() == 2);
}
