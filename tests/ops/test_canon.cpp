// core/rules/canon.h: the canonical arithmetic's functions are accurate, and its reductions
// follow the stated order. That every backend gives the same bits is checked through the ops
// (tests/ops/op_cases.cpp, exact): this file is not compiled for the CPU backend's instruction
// set, so it must not include cpu/simd.h.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "core/rules/attention_rule.h"
#include "core/rules/canon.h"

using namespace ls;

namespace {
int64_t ulps(float a, float b) {
    int32_t ia, ib;
    std::memcpy(&ia, &a, 4);
    std::memcpy(&ib, &b, 4);
    return std::abs(int64_t(ia) - int64_t(ib));
}
}  // namespace

TEST_CASE("det_exp is within 2 ulp of exp over its range", "[canon]") {
    std::mt19937 rng(5);
    std::uniform_real_distribution<float> d(-87.0f, 88.0f);
    int64_t worst = 0;
    for (int i = 0; i < 200000; ++i) {
        const float x = d(rng);
        worst = std::max(worst, ulps(det_exp(x), float(std::exp(double(x)))));
    }
    CHECK(worst <= 2);
    CHECK(det_exp(0.0f) == 1.0f);
    CHECK(det_exp(-0.0f) == 1.0f);
    CHECK(det_exp(-100.0f) == 0.0f);
    CHECK(std::isinf(det_exp(89.0f)));
    CHECK(std::isnan(det_exp(NAN)));
}

TEST_CASE("det_gelu and det_silu match their closed forms", "[canon]") {
    for (float x = -20.0f; x <= 20.0f; x += 0.01f) {
        const double u = 0.7978845608028654 * (x + 0.044715 * double(x) * x * x);
        const double gelu = 0.5 * x * (1.0 + std::tanh(u));
        CHECK(std::fabs(det_gelu(x) - gelu) <= 1e-6 * (1.0 + std::fabs(gelu)));
        const double silu = x / (1.0 + std::exp(-double(x)));
        CHECK(std::fabs(det_silu(x) - silu) <= 1e-6 * (1.0 + std::fabs(silu)));
    }
}

TEST_CASE("det_gelu_erf matches the erf GELU within its series error", "[canon]") {
    double worst = 0;
    for (float x = -30.0f; x <= 30.0f; x += 0.003f) {
        const double want = 0.5 * x * std::erfc(-double(x) / std::sqrt(2.0));  // no cancellation for x < 0
        const double err = std::fabs(det_gelu_erf(x) - want) / (1.0 + std::fabs(want));
        worst = std::max(worst, err);
    }
    CHECK(worst <= 3e-7);
    CHECK(det_gelu_erf(0.0f) == 0.0f);
    CHECK(std::fabs(det_gelu_erf(-40.0f)) < 1e-20f);
    CHECK(det_gelu_erf(40.0f) == 40.0f);
    CHECK(std::isnan(det_gelu_erf(NAN)));
}

TEST_CASE("det_log1p and det_softplus are within a few ulp of their closed forms", "[canon]") {
    std::mt19937 rng(7);
    int64_t worst_log = 0, worst_sp = 0;
    for (int i = 0; i < 200000; ++i) {
        // y over many binades, 2^-30 .. 2^29
        const float y = std::ldexp(std::uniform_real_distribution<float>(1.0f, 2.0f)(rng), int(rng() % 60) - 30);
        worst_log = std::max(worst_log, ulps(det_log1p(y), float(std::log1p(double(y)))));
        const float x = std::uniform_real_distribution<float>(-30.0f, 20.0f)(rng);
        worst_sp = std::max(worst_sp, ulps(det_softplus(x), float(std::log1p(std::exp(double(x))))));
    }
    CHECK(worst_log <= 4);
    CHECK(worst_sp <= 8);  // e^x's own error carries through where log1p(y) ~ y
    CHECK(det_log1p(0.0f) == 0.0f);
    CHECK(det_softplus(25.0f) == 25.0f);
}

TEST_CASE("canon_dot sums its products in 32 interleaved partials and a fixed tree, any length", "[canon]") {
    std::mt19937 rng(5);
    std::normal_distribution<float> d(0.f, 1.f);
    for (int n : {0, 1, 2, 31, 32, 33, 64, 100, 128, 131, 256, 2048}) {
        std::vector<float> a(size_t(n) + 1), b(size_t(n) + 1);
        for (int i = 0; i < n; ++i) a[size_t(i)] = d(rng), b[size_t(i)] = d(rng);
        float s[32] = {};
        double exact = 0;
        for (int i = 0; i < n; ++i) {
            const float prod = a[size_t(i)] * b[size_t(i)];
            s[i % 32] = s[i % 32] + prod;
            exact += double(a[size_t(i)]) * double(b[size_t(i)]);
        }
        for (int w = 16; w >= 1; w /= 2)
            for (int l = 0; l < w; ++l) s[l] = s[l] + s[l + w];
        const float got = canon_dot(a.data(), b.data(), n);
        CHECK(detp::float_bits(got) == detp::float_bits(s[0]));
        // float partial sums: error bounded by ~ (n/32 + 5) ulps of the sum of magnitudes
        double mag = 0;
        for (int i = 0; i < n; ++i) mag += std::fabs(double(a[size_t(i)]) * double(b[size_t(i)]));
        CHECK(std::fabs(double(got) - exact) <= (n / 32.0 + 6.0) * 6e-8 * mag + 1e-30);
    }
}

TEST_CASE("attention blocks fold to the softmax-weighted sum, whatever the cut", "[canon]") {
    // 300 scores over 5 blocks: the fold equals sum_k softmax(s)_k v_k to float accuracy.
    std::mt19937 rng(3);
    std::normal_distribution<float> d(0.f, 3.f);
    const int n = 300, Dv = 4;
    std::vector<float> sc(n), v(size_t(n) * Dv);
    for (auto& x : sc) x = d(rng);
    for (auto& x : v) x = d(rng);
    float m = 0, l = 0, o[Dv] = {};
    bool first = true;
    for (int b0 = 0; b0 < n; b0 += int(kAttnBlock)) {
        const int b1 = std::min(n, b0 + int(kAttnBlock));
        float mb = -INFINITY, lb = 0, ob[Dv] = {};
        for (int k = b0; k < b1; ++k) mb = std::fmax(mb, sc[size_t(k)]);
        for (int k = b0; k < b1; ++k) {
            const float p = det_exp(sc[size_t(k)] - mb);
            lb = lb + p;
            for (int i = 0; i < Dv; ++i) ob[i] = ob[i] + p * v[size_t(k) * Dv + size_t(i)];
        }
        if (first) {
            m = mb, l = lb;
            for (int i = 0; i < Dv; ++i) o[i] = ob[i];
            first = false;
        } else {
            attn_fold(m, l, o, mb, lb, ob, Dv);
        }
    }
    double mx = -1e30, sum = 0, want[Dv] = {};
    for (float x : sc) mx = std::max(mx, double(x));
    for (int k = 0; k < n; ++k) sum += std::exp(double(sc[size_t(k)]) - mx);
    for (int k = 0; k < n; ++k)
        for (int i = 0; i < Dv; ++i) want[i] += std::exp(double(sc[size_t(k)]) - mx) / sum * v[size_t(k) * Dv + size_t(i)];
    for (int i = 0; i < Dv; ++i) CHECK(std::fabs(double(canon_div(o[i], l)) - want[i]) <= 1e-5 * (1.0 + std::fabs(want[i])));
}

TEST_CASE("an attention sink folded last is an extra logit in the softmax denominator", "[canon]") {
    // gpt-oss's sinks (HF / ggml meaning): out = sum_k e^{s_k} v_k / (sum_k e^{s_k} + e^{sink}).
    // attn_fold_sink after the blocks' folds equals it to float accuracy, relative to the
    // weighted magnitudes (a dominating sink shrinks every output toward 0).
    std::mt19937 rng(5);
    std::normal_distribution<float> d(0.f, 3.f);
    const int n = 150, Dv = 4;
    std::vector<float> sc(n), v(size_t(n) * Dv);
    for (auto& x : sc) x = d(rng);
    for (auto& x : v) x = d(rng);
    for (float sink : {-200.0f, -5.0f, 0.0f, 2.5f, 12.0f, 40.0f}) {
        INFO("sink " << sink);
        float m = 0, l = 0, o[Dv] = {};
        for (int b0 = 0; b0 < n; b0 += int(kAttnBlock)) {
            const int b1 = std::min(n, b0 + int(kAttnBlock));
            float mb = -INFINITY, lb = 0, ob[Dv] = {};
            for (int k = b0; k < b1; ++k) mb = std::fmax(mb, sc[size_t(k)]);
            for (int k = b0; k < b1; ++k) {
                const float p = det_exp(sc[size_t(k)] - mb);
                lb = lb + p;
                for (int i = 0; i < Dv; ++i) ob[i] = ob[i] + p * v[size_t(k) * Dv + size_t(i)];
            }
            if (b0 == 0) {
                m = mb, l = lb;
                for (int i = 0; i < Dv; ++i) o[i] = ob[i];
            } else {
                attn_fold(m, l, o, mb, lb, ob, Dv);
            }
        }
        attn_fold_sink(m, l, o, sink, Dv);
        double mx = sink, sum = 0, want[Dv] = {}, mag[Dv] = {};
        for (float x : sc) mx = std::max(mx, double(x));
        for (int k = 0; k < n; ++k) sum += std::exp(double(sc[size_t(k)]) - mx);
        sum += std::exp(double(sink) - mx);
        for (int k = 0; k < n; ++k)
            for (int i = 0; i < Dv; ++i) {
                const double w = std::exp(double(sc[size_t(k)]) - mx) / sum;
                want[i] += w * v[size_t(k) * Dv + size_t(i)];
                mag[i] += w * std::fabs(double(v[size_t(k) * Dv + size_t(i)]));
            }
        for (int i = 0; i < Dv; ++i) CHECK(std::fabs(double(canon_div(o[i], l)) - want[i]) <= 1e-5 * mag[i] + 1e-37);
    }
}
