// Helpers for tests that compare logits: random prompts, token-at-a-time evaluation, and
// bit-identity checks that say where two logit arrays first differ.
#pragma once
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <sstream>
#include <string>
#include <vector>

#include "core/runtime/session.h"
#include "tests/support/test_util.h"

namespace ls::test {

inline std::vector<int32_t> random_tokens(size_t n, uint32_t seed, int32_t n_vocab) {
    std::vector<int32_t> t(n);
    uint64_t x = seed * 0x9e3779b97f4a7c15ull + 1;
    for (auto& v : t) {
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        v = int32_t((x >> 33) % uint64_t(n_vocab));
    }
    return t;
}

inline std::vector<int32_t> concat(std::vector<int32_t> a, const std::vector<int32_t>& b) {
    a.insert(a.end(), b.begin(), b.end());
    return a;
}
inline std::vector<int32_t> head(const std::vector<int32_t>& a, size_t n) { return {a.begin(), a.begin() + n}; }

// Logits of every token, evaluated one token per eval call.
inline std::vector<float> one_by_one(Session& s, const std::vector<int32_t>& tokens, int seq = 0) {
    std::vector<float> out;
    for (int32_t t : tokens) {
        std::vector<float> l = s.eval({t}, 0, seq);
        out.insert(out.end(), l.begin(), l.end());
    }
    return out;
}

// The argmax of the last row of n_vocab logits.
inline int32_t argmax_last(const std::vector<float>& logits, int64_t n_vocab) {
    const auto last = logits.end() - n_vocab;
    return int32_t(std::max_element(last, logits.end()) - last);
}

// `steps` greedy one-token decode steps after `logits` (a prompt's): each step evaluates the
// argmax of the one before; every step's logits, one after another.
inline std::vector<float> greedy_steps(Session& s, std::vector<float> logits, int64_t n_vocab, int steps) {
    std::vector<float> out;
    for (int i = 0; i < steps; ++i) {
        logits = s.eval({argmax_last(logits, n_vocab)});
        out.insert(out.end(), logits.begin(), logits.end());
    }
    return out;
}

// "" when a and b are bit-identical, else where they first differ.
inline std::string first_difference(const std::vector<float>& a, const std::vector<float>& b, int64_t n_vocab) {
    std::ostringstream o;
    if (a.size() != b.size()) {
        o << "sizes differ: " << a.size() << " vs " << b.size();
        return o.str();
    }
    size_t n_diff = 0, first = 0;
    double worst = 0;
    for (size_t i = 0; i < a.size(); ++i)
        if (std::memcmp(&a[i], &b[i], sizeof(float)) != 0) {
            if (n_diff++ == 0) first = i;
            worst = worst_of(worst, std::fabs(double(a[i]) - double(b[i])));
        }
    if (n_diff == 0) return "";
    o << n_diff << " of " << a.size() << " logits differ; first at position " << first / n_vocab << " token "
      << first % n_vocab << " (" << a[first] << " vs " << b[first] << "); largest difference " << worst;
    return o.str();
}

// Same backend, different batching: every op of the graph computes each token's row on its
// own (the CPU mul_mat quantizes each activation row and dots it block by block whatever the
// tile; attention reads the same cache rows in the same order; set_rows quantizes each row
// with the reference quantizer), so the logits must be bit-identical, not merely close.
// ASSERT: REQUIRE (stop the test) or CHECK (go on).
#define LS_BIT_IDENTICAL_(ASSERT, a, b, n_vocab)                               \
    do {                                                                       \
        const std::string diff_ = ::ls::test::first_difference(a, b, n_vocab); \
        INFO(diff_);                                                           \
        ASSERT(diff_.empty());                                                 \
    } while (0)
#define REQUIRE_BIT_IDENTICAL(a, b, n_vocab) LS_BIT_IDENTICAL_(REQUIRE, a, b, n_vocab)
#define CHECK_BIT_IDENTICAL(a, b, n_vocab) LS_BIT_IDENTICAL_(CHECK, a, b, n_vocab)

// The logits of the first run it is shown (the reference backend: all_backend_names() lists it
// first), which every later run of the same prompt must equal bit for bit, whatever its backend
// or batch shape. Tests that compare with an independent oracle (transformers) within a
// tolerance check this beside it: the tolerance alone would pass a backend one ulp off.
class SameBitsAsFirst {
public:
    explicit SameBitsAsFirst(int64_t n_vocab) : n_vocab_(n_vocab) {}
    void check(const std::vector<float>& got) {
        if (first_.empty()) {
            REQUIRE_FALSE(got.empty());
            first_ = got;
            return;
        }
        INFO("bit for bit against the first run (the reference backend)");
        CHECK_BIT_IDENTICAL(got, first_, n_vocab_);
    }

private:
    int64_t n_vocab_;
    std::vector<float> first_;
};

// log(sum exp(x - max)) + max of one row, in double.
inline double log_sum_exp(const float* x, int64_t n_vocab) {
    double mx = x[0], sum = 0;
    for (int64_t i = 0; i < n_vocab; ++i) mx = std::fmax(mx, x[i]);
    for (int64_t i = 0; i < n_vocab; ++i) sum += std::exp(x[i] - mx);
    return mx + std::log(sum);
}

inline std::vector<double> log_softmax(const std::vector<float>& logits, int64_t n_vocab) {
    std::vector<double> out(logits.size());
    for (size_t r = 0; r < logits.size() / size_t(n_vocab); ++r) {
        const float* x = logits.data() + r * n_vocab;
        const double lse = log_sum_exp(x, n_vocab);
        for (int64_t i = 0; i < n_vocab; ++i) out[r * n_vocab + i] = x[i] - lse;
    }
    return out;
}

}  // namespace ls::test
