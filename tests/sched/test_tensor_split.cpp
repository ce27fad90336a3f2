// Tensor parallelism's host logic (core/sched/tensor_split.h): output slices by shares in whole
// granules, and the all-gather's layout put back into whole rows, checked against a plain
// gather of the rows one device would compute.
#include <catch2/catch.hpp>

#include <numeric>

#include "core/sched/tensor_split.h"

using namespace ls;

TEST_CASE("tensor split: output units by shares, in whole granules, every unit once", "[placement]") {
    auto sizes = [](const std::vector<UnitSlice>& v) {
        std::vector<int64_t> s;
        for (const UnitSlice& u : v) s.push_back(u.size());
        return s;
    };
    CHECK(sizes(split_units(32, 4, {1, 1})) == std::vector<int64_t>{16, 16});       // heads, 4 per KV head
    CHECK(sizes(split_units(32, 4, {3, 1})) == std::vector<int64_t>{24, 8});
    CHECK(sizes(split_units(32, 4, {1, 1, 1})) == std::vector<int64_t>{12, 8, 12});  // granules 3, 2, 3
    CHECK(sizes(split_units(262144, 32, {0, 1})) == std::vector<int64_t>{0, 262144});
    const auto v = split_units(6144, 256, {2, 1, 1});
    CHECK(v.front().begin == 0);
    CHECK(v.back().end == 6144);
    for (size_t d = 1; d < v.size(); ++d) CHECK(v[d].begin == v[d - 1].end);
    CHECK_THROWS_WITH(split_units(30, 4, {1, 1}), Catch::Contains("not whole granules of 4"));
    CHECK_THROWS_WITH(split_units(32, 4, {0, 0}), Catch::Contains("add up to 0"));
    CHECK_THROWS_WITH(split_units(32, 4, {}), Catch::Contains("no device"));
}

TEST_CASE("tensor split: the all-gather's slices put back give the whole rows", "[placement]") {
    const int64_t heads = 12, head_dim = 3, rows = 5;
    for (const std::vector<double>& shares : {std::vector<double>{1, 1}, {3, 1}, {1, 2, 1}, {0, 1, 1}}) {
        const auto slices = split_units(heads, 2, shares);
        // What one device computes: value (row r, head h, element e).
        auto value = [](int64_t r, int64_t h, int64_t e) { return float(r * 1000 + h * 10 + e); };
        std::vector<float> want(size_t(heads * head_dim * rows));
        for (int64_t r = 0; r < rows; ++r)
            for (int64_t h = 0; h < heads; ++h)
                for (int64_t e = 0; e < head_dim; ++e) want[size_t(r * heads * head_dim + h * head_dim + e)] = value(r, h, e);
        // Each device's padded send buffer, concatenated as NCCL's all-gather leaves them.
        const GatherLayout g = gather_layout(slices, head_dim, rows);
        std::vector<float> gathered(size_t(g.padded * rows) * slices.size(), -1.f);
        for (size_t d = 0; d < slices.size(); ++d)
            for (int64_t r = 0; r < rows; ++r)
                for (int64_t h = slices[d].begin; h < slices[d].end; ++h)
                    for (int64_t e = 0; e < head_dim; ++e)
                        gathered[size_t(int64_t(d) * g.padded * rows + r * g.padded + (h - slices[d].begin) * head_dim + e)] = value(r, h, e);
        std::vector<float> got(want.size(), -2.f);
        for (const GatherLayout::Copy& c : g.place)
            std::copy(gathered.begin() + c.src, gathered.begin() + c.src + c.count, got.begin() + c.dst);
        INFO("shares " << shares.size());
        CHECK(got == want);
    }
}
