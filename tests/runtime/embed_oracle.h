// The embedding tests' comparison with their float64 oracles (tools/oracle/embed_numpy.py,
// bert_tiny.py, gemma_embedding_tiny.py): each vector within a cosine of the oracle's, and
// the same bits as the first backend's vector for the same case.
#pragma once
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <istream>
#include <sstream>
#include <string>
#include <vector>

#include "core/runtime/embed.h"

namespace ls::test {

inline double cosine(const std::vector<float>& a, const std::vector<double>& b) {
    double ab = 0, aa = 0, bb = 0;
    for (size_t i = 0; i < a.size(); ++i) ab += a[i] * b[i], aa += double(a[i]) * a[i], bb += b[i] * b[i];
    return ab / std::sqrt(aa * bb);
}

inline bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
    return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

// One case of an oracle file: a line 'case MODEL POOLING N tok0 tok1 ...', then a line of the
// n_embd values the oracle computed.
struct OracleCase {
    std::string model;
    Pooling pooling = Pooling::None;
    std::vector<int32_t> tokens;
    std::vector<double> want;
};

// The case whose 'case' word `h` has just read; its values are the next line of `f`.
inline OracleCase read_oracle_case(std::istream& h, std::istream& f) {
    OracleCase c;
    std::string pooling, line;
    size_t n = 0;
    h >> c.model >> pooling >> n;
    c.pooling = parse_pooling(pooling);
    c.tokens.resize(n);
    for (auto& t : c.tokens) h >> t;
    REQUIRE(std::getline(f, line));
    std::istringstream v(line);
    double x;
    while (v >> x) c.want.push_back(x);
    return c;
}

struct OracleTally {
    double worst = 1.0;                     // the lowest cosine seen
    std::vector<std::vector<float>> first;  // per case, the first backend's vector
    // Case k's vector: float32 through a few layers (F16 cache rows) against float64 is
    // within 1e-4 of cosine 1 (measured: 1 - 2e-7 to 1 - 1.3e-6); every later backend, ubatch
    // and batch gives the first one's bits.
    void check(const std::vector<float>& got, const std::vector<double>& want, size_t k) {
        REQUIRE(got.size() == want.size());
        const double cs = cosine(got, want);
        worst = std::min(worst, cs);
        CHECK(cs >= 0.9999);
        if (first.size() <= k) first.push_back(got);
        else CHECK(same_bits(got, first[k]));
    }
};

}  // namespace ls::test
