// Small xsimd building blocks shared by the CPU kernels. Each has a scalar twin in the
// reference ops; the op tests compare the two.
#pragma once
#include <cstdint>
#include <xsimd/xsimd.hpp>

namespace ls::cpu::simd {

using fbatch = xsimd::batch<float>;
constexpr int64_t W = int64_t(fbatch::size);

inline float dot(const float* a, const float* b, int64_t n) {
    fbatch acc0(0.f), acc1(0.f);
    int64_t i = 0;
    for (; i + 2 * W <= n; i += 2 * W) {
        acc0 = xsimd::fma(fbatch::load_unaligned(a + i), fbatch::load_unaligned(b + i), acc0);
        acc1 = xsimd::fma(fbatch::load_unaligned(a + i + W), fbatch::load_unaligned(b + i + W), acc1);
    }
    for (; i + W <= n; i += W) acc0 = xsimd::fma(fbatch::load_unaligned(a + i), fbatch::load_unaligned(b + i), acc0);
    float s = xsimd::hadd(acc0 + acc1);
    for (; i < n; ++i) s += a[i] * b[i];
    return s;
}

// y += a * x
inline void axpy(float a, const float* x, float* y, int64_t n) {
    const fbatch va(a);
    int64_t i = 0;
    for (; i + W <= n; i += W) xsimd::fma(va, fbatch::load_unaligned(x + i), fbatch::load_unaligned(y + i)).store_unaligned(y + i);
    for (; i < n; ++i) y[i] += a * x[i];
}

inline void scale(float* y, float a, int64_t n) {
    const fbatch va(a);
    int64_t i = 0;
    for (; i + W <= n; i += W) (fbatch::load_unaligned(y + i) * va).store_unaligned(y + i);
    for (; i < n; ++i) y[i] *= a;
}

}  // namespace ls::cpu::simd
