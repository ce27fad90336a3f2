#include <catch2/catch.hpp>

#include "tests/sampling/stage_util.h"

using namespace ls;
using ls::test::StageRun;

TEST_CASE("sampler stage min_p: candidates at least min_p times the most likely, order kept", "[sampling]") {
    StageRun r({0, 0, 0, 0});
    r.with({3, 0, 2, 1}, {0.1f, 0.5f, 0.25f, 0.15f}).run(*make_min_p(0.3f));
    CHECK(r.c.ids == std::vector<int32_t>{0, 2, 1});  // 0.15 >= 0.3 * 0.5
    CHECK(r.c.p == std::vector<float>{0.5f, 0.25f, 0.15f});
}
