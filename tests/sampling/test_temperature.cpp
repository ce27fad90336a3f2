#include <catch2/catch.hpp>
#include <cmath>
#include <limits>

#include "tests/sampling/stage_util.h"

using namespace ls;
using ls::test::StageRun;

TEST_CASE("sampler stage temperature: softmax of logit / temp over the candidates", "[sampling]") {
    StageRun r({std::log(1.0f), std::log(3.0f), 100.0f});
    r.with({1, 0}).run(*make_temperature(1.0f));
    REQUIRE(r.c.p.size() == 2);
    CHECK(r.c.p[0] == Approx(0.75f));
    CHECK(r.c.p[1] == Approx(0.25f));
    // Temperature 0.5 squares the odds.
    StageRun h({std::log(1.0f), std::log(3.0f)});
    h.with({0, 1}).run(*make_temperature(0.5f));
    CHECK(h.c.p[1] / h.c.p[0] == Approx(9.0f));
}

TEST_CASE("sampler stage temperature: no finite candidate gives all the weight to the lowest id", "[sampling]") {
    const float inf = std::numeric_limits<float>::infinity();
    StageRun r({-inf, -inf, -inf});
    r.with({2, 1}).run(*make_temperature(0.7f));
    CHECK(r.c.p == std::vector<float>{0.0f, 1.0f});
}
