#include <catch2/catch.hpp>
#include <cmath>
#include <limits>

#include "tests/sampling/stage_util.h"

using namespace ls;
using ls::test::StageRun;

TEST_CASE("sampler stage logit_bias: adds to the logit, -inf bans, a bad id is named", "[sampling]") {
    const float inf = std::numeric_limits<float>::infinity();
    StageRun r({1.0f, 2.0f, 3.0f});
    r.run(*make_logit_bias({{0, 0.5f}, {2, -inf}, {0, 1.0f}}));
    CHECK(r.logits[0] == 2.5f);  // both entries for id 0 apply
    CHECK(r.logits[1] == 2.0f);
    CHECK(r.logits[2] == -inf);
    StageRun bad({1.0f, 2.0f});
    CHECK_THROWS_WITH(bad.run(*make_logit_bias({{2, 1.0f}})), Catch::Contains("token id 2 out of range [0, 2)"));
    CHECK_THROWS_WITH(bad.run(*make_logit_bias({{-1, 1.0f}})), Catch::Contains("token id -1"));
}
