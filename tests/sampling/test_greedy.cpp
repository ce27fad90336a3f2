#include <catch2/catch.hpp>
#include <cmath>
#include <limits>

#include "tests/sampling/stage_util.h"

using namespace ls;
using ls::test::StageRun;

TEST_CASE("sampler stage greedy: the first maximum, a NaN never wins over a number", "[sampling]") {
    const float nan = std::numeric_limits<float>::quiet_NaN();
    CHECK(StageRun({1.0f, 3.0f, 3.0f, 2.0f}).run(*make_greedy()).c.chosen == 1);
    CHECK(StageRun({1.0f, nan, 2.0f}).run(*make_greedy()).c.chosen == 2);
    CHECK(StageRun({-std::numeric_limits<float>::infinity(), -1.0f}).run(*make_greedy()).c.chosen == 1);
}
