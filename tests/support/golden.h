// Golden logits written by the oracle scripts (tools/oracle/*_tiny.py): int32 n, int32 n_vocab,
// n int32 tokens, then n x n_vocab float32 logits; and how far a run is from them.
#pragma once
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <fstream>
#include <string>
#include <vector>

#include "tests/support/test_util.h"

namespace ls::test {

struct Golden {
    int32_t n = 0, n_vocab = 0;
    std::vector<int32_t> tokens;
    std::vector<float> logits;  // [n][n_vocab]
};

// tests/data/<name>.golden
inline Golden read_golden(const std::string& name) {
    std::ifstream f(test_data(name + ".golden"), std::ios::binary);
    REQUIRE(f.good());
    Golden g;
    f.read(reinterpret_cast<char*>(&g.n), 4);
    f.read(reinterpret_cast<char*>(&g.n_vocab), 4);
    REQUIRE((g.n > 0 && g.n_vocab > 0));
    g.tokens.resize(size_t(g.n));
    g.logits.resize(size_t(g.n) * size_t(g.n_vocab));
    f.read(reinterpret_cast<char*>(g.tokens.data()), std::streamsize(g.tokens.size() * 4));
    f.read(reinterpret_cast<char*>(g.logits.data()), std::streamsize(g.logits.size() * 4));
    REQUIRE(f.good());
    return g;
}

struct GoldenDiff {
    double worst = 0;  // largest |logit - golden|
    int flipped = 0;   // positions whose argmax differs
};

// `got`: the logits of every golden token, in order.
inline GoldenDiff compare_golden(const std::vector<float>& got, const Golden& gold) {
    REQUIRE(got.size() == gold.logits.size());
    GoldenDiff d;
    const size_t V = size_t(gold.n_vocab);
    for (size_t t = 0; t < size_t(gold.n); ++t) {
        const float* a = got.data() + t * V;
        const float* g = gold.logits.data() + t * V;
        for (size_t v = 0; v < V; ++v) d.worst = worst_of(d.worst, double(std::fabs(a[v] - g[v])));
        d.flipped += std::max_element(a, a + V) - a != std::max_element(g, g + V) - g;
    }
    return d;
}

}  // namespace ls::test
