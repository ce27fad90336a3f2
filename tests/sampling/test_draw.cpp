#include <catch2/catch.hpp>
#include <set>

#include "tests/sampling/stage_util.h"

using namespace ls;
using ls::test::StageRun;

TEST_CASE("sampler stage draw: the keyed number picks by cumulative probability", "[sampling]") {
    // For each position, the pick is the first candidate whose running sum passes u * total.
    std::set<int32_t> seen;
    for (int64_t pos = 0; pos < 200; ++pos) {
        StageRun r({0, 0, 0}, {}, pos);
        r.with({2, 0, 1}, {0.5f, 0.25f, 0.25f}).run(*make_draw(7, 3));
        const double u = keyed_uniform(7, 3, pos);
        const int32_t want = u < 0.5 ? 2 : u < 0.75 ? 0 : 1;
        CHECK(r.c.chosen == want);
        seen.insert(r.c.chosen);
    }
    CHECK(seen.size() == 3);
    // Unnormalized weights draw the same as normalized ones.
    StageRun a({0, 0}, {}, 5), b({0, 0}, {}, 5);
    a.with({0, 1}, {1.0f, 3.0f}).run(*make_draw(1, 0));
    b.with({0, 1}, {0.25f, 0.75f}).run(*make_draw(1, 0));
    CHECK(a.c.chosen == b.c.chosen);
}

TEST_CASE("sampler stage draw: keys differ by seed, stream and position", "[sampling]") {
    CHECK(keyed_uniform(1, 0, 0) != keyed_uniform(2, 0, 0));
    CHECK(keyed_uniform(1, 0, 0) != keyed_uniform(1, 1, 0));
    CHECK(keyed_uniform(1, 0, 0) != keyed_uniform(1, 0, 1));
    for (int64_t pos = 0; pos < 1000; ++pos) {
        const double u = keyed_uniform(42, 9, pos);
        REQUIRE(u >= 0.0);
        REQUIRE(u < 1.0);
    }
}
