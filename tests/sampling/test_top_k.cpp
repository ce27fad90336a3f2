#include <catch2/catch.hpp>
#include <cmath>
#include <limits>

#include "tests/sampling/stage_util.h"

using namespace ls;
using ls::test::StageRun;

TEST_CASE("sampler stage top_k: the k best in order, ties to the lower id, NaN last, off keeps every id", "[sampling]") {
    const float nan = std::numeric_limits<float>::quiet_NaN();
    const std::vector<float> l{0.5f, nan, 2.0f, 2.0f, -1.0f, 3.0f};
    CHECK(StageRun(l).run(*make_top_k(3)).c.ids == std::vector<int32_t>{5, 2, 3});
    CHECK(StageRun(l).run(*make_top_k(5)).c.ids == std::vector<int32_t>{5, 2, 3, 0, 4});
    // Only NaN left to fill the k-th place: it comes last.
    CHECK(StageRun({nan, 1.0f}).run(*make_top_k(1)).c.ids == std::vector<int32_t>{1});
    for (int k : {0, -1, 6, 100}) {
        StageRun r(l);
        r.run(*make_top_k(k));
        CHECK(r.c.formed);
        CHECK(r.c.ids == std::vector<int32_t>{0, 1, 2, 3, 4, 5});
    }
}
