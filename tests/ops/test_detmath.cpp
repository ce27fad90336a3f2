// core/rules/detmath.h: deterministic exp/GELU/SiLU are accurate. That the CPU's SIMD versions
// give the same bits is checked through the ops (tests/ops/op_cases.cpp, exact): this file is
// not compiled for the CPU backend's instruction set, so it must not include cpu/simd.h.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <random>

#include "core/rules/detmath.h"

using namespace ls;

namespace {
int64_t ulps(float a, float b) {
    int32_t ia, ib;
    std::memcpy(&ia, &a, 4);
    std::memcpy(&ib, &b, 4);
    return std::abs(int64_t(ia) - int64_t(ib));
}
}  // namespace

TEST_CASE("det_exp is within 2 ulp of exp over its range", "[detmath]") {
    std::mt19937 rng(5);
    std::uniform_real_distribution<float> d(-87.0f, 88.0f);
    int64_t worst = 0;
    for (int i = 0; i < 200000; ++i) {
        const float x = d(rng);
        worst = std::max(worst, ulps(det_exp(x), float(std::exp(double(x)))));
    }
    CHECK(worst <= 2);
    CHECK(det_exp(0.0f) == 1.0f);
    CHECK(det_exp(-100.0f) == 0.0f);
    CHECK(std::isinf(det_exp(89.0f)));
    CHECK(std::isnan(det_exp(NAN)));
}

TEST_CASE("det_gelu and det_silu match their closed forms", "[detmath]") {
    for (float x = -20.0f; x <= 20.0f; x += 0.01f) {
        const double u = 0.7978845608028654 * (x + 0.044715 * double(x) * x * x);
        const double gelu = 0.5 * x * (1.0 + std::tanh(u));
        CHECK(std::fabs(det_gelu(x) - gelu) <= 1e-6 * (1.0 + std::fabs(gelu)));
        const double silu = x / (1.0 + std::exp(-double(x)));
        CHECK(std::fabs(det_silu(x) - silu) <= 1e-6 * (1.0 + std::fabs(silu)));
    }
}


TEST_CASE("det_dot4 sums exact products in its fixed order, any length", "[detmath]") {
    std::mt19937 rng(5);
    std::normal_distribution<float> d(0.f, 1.f);
    for (int n : {0, 1, 2, 3, 4, 5, 7, 128, 131}) {
        std::vector<float> a(size_t(n) + 1), b(size_t(n) + 1);
        for (int i = 0; i < n; ++i) a[size_t(i)] = d(rng), b[size_t(i)] = d(rng);
        double s[4] = {0, 0, 0, 0}, exact = 0;
        for (int i = 0; i < n; ++i) {
            s[i % 4] += double(a[size_t(i)]) * double(b[size_t(i)]);
            exact += double(a[size_t(i)]) * double(b[size_t(i)]);
        }
        const float got = ls::det_dot4(a.data(), b.data(), n);
        CHECK(got == float((s[0] + s[1]) + (s[2] + s[3])));
        CHECK(std::fabs(double(got) - exact) <= 1e-6 * (1.0 + std::fabs(exact)));
    }
}
