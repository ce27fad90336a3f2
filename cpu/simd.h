// Small xsimd building blocks shared by the CPU kernels. Each has a scalar twin in the
// reference ops; the op tests compare the two.
#pragma once
#include <cstdint>
#include <xsimd/xsimd.hpp>
#if defined(__AVX__) || defined(__AVX512F__)
#include <immintrin.h>
#endif

#include "core/rules/detmath.h"

namespace ls::cpu::simd {

using fbatch = xsimd::batch<float>;
constexpr int64_t W = int64_t(fbatch::size);

// a * b + c rounded once. xsimd 8.1 (Debian 12's libxsimd-dev) has no AVX-512 fma: batches of
// 16 floats fall back to its generic x * y + z, which rounds twice and broke the kernels'
// bit-for-bit match with the reference (det_exp, attention's accumulation) on AVX-512 CPUs.
inline fbatch fma(const fbatch& a, const fbatch& b, const fbatch& c) {
#if defined(__AVX512F__)
    if constexpr (fbatch::size == 16) return fbatch(_mm512_fmadd_ps(a, b, c));
#endif
    return xsimd::fma(a, b, c);
}

inline float dot(const float* a, const float* b, int64_t n) {
    fbatch acc0(0.f), acc1(0.f);
    int64_t i = 0;
    for (; i + 2 * W <= n; i += 2 * W) {
        acc0 = simd::fma(fbatch::load_unaligned(a + i), fbatch::load_unaligned(b + i), acc0);
        acc1 = simd::fma(fbatch::load_unaligned(a + i + W), fbatch::load_unaligned(b + i + W), acc1);
    }
    for (; i + W <= n; i += W) acc0 = simd::fma(fbatch::load_unaligned(a + i), fbatch::load_unaligned(b + i), acc0);
    float s = xsimd::hadd(acc0 + acc1);
    for (; i < n; ++i) s += a[i] * b[i];
    return s;
}

// det_dot (core/rules/detmath.h) vectorized: exact products summed in double. Only the order of
// the double sum differs from the scalar twin (2^-53 relative), below float resolution.
inline double dot_f64(const float* a, const float* b, int64_t n) {
#if defined(__AVX__)
    __m256d acc0 = _mm256_setzero_pd(), acc1 = _mm256_setzero_pd();
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        // xsimd 8 has no float->double widening of half a batch; AVX's cvtps_pd does it.
        const __m256d a0 = _mm256_cvtps_pd(_mm_loadu_ps(a + i)), b0 = _mm256_cvtps_pd(_mm_loadu_ps(b + i));
        const __m256d a1 = _mm256_cvtps_pd(_mm_loadu_ps(a + i + 4)), b1 = _mm256_cvtps_pd(_mm_loadu_ps(b + i + 4));
        acc0 = _mm256_add_pd(acc0, _mm256_mul_pd(a0, b0));  // the product is exact: no fma needed
        acc1 = _mm256_add_pd(acc1, _mm256_mul_pd(a1, b1));
    }
    alignas(32) double lanes[4];
    _mm256_store_pd(lanes, _mm256_add_pd(acc0, acc1));
    double s = (lanes[0] + lanes[1]) + (lanes[2] + lanes[3]);
    for (; i < n; ++i) s += double(a[i]) * double(b[i]);
    return s;
#else
    double s = 0;
    for (int64_t i = 0; i < n; ++i) s += double(a[i]) * double(b[i]);
    return s;
#endif
}

// det_dot4 (core/rules/detmath.h) bit for bit: its four partial sums s[j mod 4] are the four lanes
// of one double vector (each lane adds exact products in the same order), combined as
// (s0 + s1) + (s2 + s3). The delta-rule scan's row dots (cpu/ops/delta_scan.cpp).
inline float dot4(const float* a, const float* b, int64_t n) {
#if defined(__AVX__)
    __m256d acc = _mm256_setzero_pd();
    int64_t i = 0;
    for (; i + 4 <= n; i += 4)
        acc = _mm256_add_pd(acc, _mm256_mul_pd(_mm256_cvtps_pd(_mm_loadu_ps(a + i)), _mm256_cvtps_pd(_mm_loadu_ps(b + i))));
    alignas(32) double s[4];
    _mm256_store_pd(s, acc);
    for (int l = 0; i < n; ++i, ++l) s[l] += double(a[i]) * double(b[i]);
    return float((s[0] + s[1]) + (s[2] + s[3]));
#else
    return det_dot4(a, b, n);
#endif
}

// det_exp / det_gelu / det_silu (core/rules/detmath.h) on batches: the same IEEE operations in
// the same order, so each lane equals the scalar definition bit for bit.
inline fbatch det_exp(fbatch x) {
    using namespace detc;
    using ibatch = xsimd::batch<int32_t>;
    const fbatch xc = xsimd::min(xsimd::max(x, fbatch(kLo)), fbatch(kHi));
    const fbatch t = xc * fbatch(kLog2e) + fbatch(kMagic);
    const fbatch n = t - fbatch(kMagic);
    fbatch r = simd::fma(-n, fbatch(kLn2Hi), xc);
    r = simd::fma(-n, fbatch(kLn2Lo), r);
    fbatch p(kP[0]);
    for (int i = 1; i < 8; ++i) p = simd::fma(p, r, fbatch(kP[i]));
    const ibatch bits = (xsimd::bitwise_cast<ibatch>(t) - xsimd::bitwise_cast<ibatch>(fbatch(kMagic)) + ibatch(127)) << 23;
    fbatch y = p * xsimd::bitwise_cast<fbatch>(bits);
    y = xsimd::select(x < fbatch(kLo), fbatch(0.0f), y);
    y = xsimd::select(x > fbatch(kInf), fbatch(INFINITY), y);
    return xsimd::select(x != x, x, y);
}
inline float det_exp(float x) { return ls::det_exp(x); }

template <class T> T det_gelu(T x) {
    const T u = T(detc::kGeluA) * (x + T(detc::kGeluB) * (x * x * x));
    return x / (T(1.0f) + det_exp(T(-2.0f) * u));
}
template <class T> T det_silu(T x) { return x / (T(1.0f) + det_exp(-x)); }

// The same sum over operands already widened to double.
inline double dot_f64(const double* a, const double* b, int64_t n) {
#if defined(__AVX2__) && defined(__FMA__)
    // Four independent chains: one would wait on the fma latency at every step.
    __m256d acc0 = _mm256_setzero_pd(), acc1 = _mm256_setzero_pd(), acc2 = _mm256_setzero_pd(), acc3 = _mm256_setzero_pd();
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) {
        // a*b of two widened floats is exact, so the fused form rounds like mul-then-add.
        acc0 = _mm256_fmadd_pd(_mm256_loadu_pd(a + i), _mm256_loadu_pd(b + i), acc0);
        acc1 = _mm256_fmadd_pd(_mm256_loadu_pd(a + i + 4), _mm256_loadu_pd(b + i + 4), acc1);
        acc2 = _mm256_fmadd_pd(_mm256_loadu_pd(a + i + 8), _mm256_loadu_pd(b + i + 8), acc2);
        acc3 = _mm256_fmadd_pd(_mm256_loadu_pd(a + i + 12), _mm256_loadu_pd(b + i + 12), acc3);
    }
    alignas(32) double lanes[4];
    _mm256_store_pd(lanes, _mm256_add_pd(_mm256_add_pd(acc0, acc1), _mm256_add_pd(acc2, acc3)));
    double s = (lanes[0] + lanes[1]) + (lanes[2] + lanes[3]);
    for (; i < n; ++i) s += a[i] * b[i];
    return s;
#else
    double s = 0;
    for (int64_t i = 0; i < n; ++i) s += a[i] * b[i];
    return s;
#endif
}

// y = fma(a, x, y), elementwise (the accumulation the attention reference defines)
inline void fma_axpy(float a, const float* x, float* y, int64_t n) {
    const fbatch va(a);
    int64_t i = 0;
    for (; i + W <= n; i += W) simd::fma(va, fbatch::load_unaligned(x + i), fbatch::load_unaligned(y + i)).store_unaligned(y + i);
    for (; i < n; ++i) y[i] += a * x[i];
}

inline void scale(float* y, float a, int64_t n) {
    const fbatch va(a);
    int64_t i = 0;
    for (; i + W <= n; i += W) (fbatch::load_unaligned(y + i) * va).store_unaligned(y + i);
    for (; i < n; ++i) y[i] *= a;
}

}  // namespace ls::cpu::simd
