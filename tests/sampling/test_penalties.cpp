#include <catch2/catch.hpp>

#include "tests/sampling/stage_util.h"

using namespace ls;
using ls::test::StageRun;

TEST_CASE("sampler stage penalties: repetition divides a positive logit and multiplies a negative one, once per token", "[sampling]") {
    StageRun r({4.0f, -4.0f, 4.0f}, {0, 0, 1});
    r.run(*make_penalties(2.0f, 0.0f, 0.0f, -1));
    CHECK(r.logits[0] == 2.0f);  // twice in the history, penalized once
    CHECK(r.logits[1] == -8.0f);
    CHECK(r.logits[2] == 4.0f);
}

TEST_CASE("sampler stage penalties: frequency per occurrence, presence once, over the last n tokens", "[sampling]") {
    StageRun all({1.0f, 1.0f, 1.0f}, {0, 0, 0, 1});
    all.run(*make_penalties(1.0f, 0.5f, 0.25f, -1));
    CHECK(all.logits[0] == 1.0f - 3 * 0.5f - 0.25f);
    CHECK(all.logits[1] == 1.0f - 0.5f - 0.25f);
    CHECK(all.logits[2] == 1.0f);
    // last_n = 2: only "0, 1" at the end count.
    StageRun last({1.0f, 1.0f, 1.0f}, {0, 0, 0, 1});
    last.run(*make_penalties(1.0f, 0.5f, 0.0f, 2));
    CHECK(last.logits[0] == 0.5f);
    CHECK(last.logits[1] == 0.5f);
    // last_n = 0: off; ids outside the vocabulary in the history are skipped.
    StageRun off({1.0f, 1.0f}, {0, 1, 7, -3});
    off.run(*make_penalties(2.0f, 1.0f, 1.0f, 0));
    CHECK(off.logits == std::vector<float>{1.0f, 1.0f});
    StageRun odd({1.0f, 1.0f}, {7, -3});
    odd.run(*make_penalties(2.0f, 1.0f, 1.0f, -1));
    CHECK(odd.logits == std::vector<float>{1.0f, 1.0f});
}
