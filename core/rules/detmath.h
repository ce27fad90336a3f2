// Deterministic float math: the same sequence of IEEE operations on every backend, so that
// backends produce the same bits, not merely close values. This matters more than it seems:
// activations are quantized to 8 bits before every matmul, and Gemma's outlier features make
// the quantization step large, so a 1-ulp difference that moves one value across a rounding
// step can change a logit by a whole unit several layers later. Backends therefore
//  - never let the compiler contract a*b+c (the build uses -ffp-contract=off; GPU backends
//    use explicit fma and 'precise'), and use fma only where the definition says so;
//  - use det_exp below instead of the platform's exp/tanh (libm, xsimd, CUDA and GLSL all
//    differ in the last bits);
//  - sum products of floats in double (each product is exact in double, so the order of
//    the sum changes the result only at 2^-53 relative, below float's resolution).
#pragma once
#include <cmath>
#include <cstdint>
#include <cstring>

#include "core/rules/hd.h"

// The same definitions compile for CUDA kernels (backends/cuda/) through LS_HD, and the few
// primitives below pick the device intrinsic that performs the identical IEEE operation
// (fma rounded once, fmin/fmax, bit casts).
namespace ls {

namespace detp {
LS_HD inline float fma(float a, float b, float c) {
#if defined(__CUDA_ARCH__)
    return __fmaf_rn(a, b, c);
#else
    return std::fma(a, b, c);
#endif
}
LS_HD inline float fmin(float a, float b) {
#if defined(__CUDA_ARCH__)
    return fminf(a, b);
#else
    return std::fmin(a, b);
#endif
}
LS_HD inline float fmax(float a, float b) {
#if defined(__CUDA_ARCH__)
    return fmaxf(a, b);
#else
    return std::fmax(a, b);
#endif
}
LS_HD inline int32_t float_bits(float f) {
#if defined(__CUDA_ARCH__)
    return __float_as_int(f);
#else
    int32_t i;
    std::memcpy(&i, &f, 4);
    return i;
#endif
}
LS_HD inline float bits_float(int32_t i) {
#if defined(__CUDA_ARCH__)
    return __int_as_float(i);
#else
    float f;
    std::memcpy(&f, &i, 4);
    return f;
#endif
}
}  // namespace detp

// e^x to within 1 ulp for x in [-87, 88]; 0 below -87, +inf above 88.7. Range reduction by
// ln 2 (Cody-Waite, two constants), degree-7 Taylor polynomial on |r| <= ln2/2 (truncation
// error < 6e-9 relative), scaling by 2^n through the exponent bits. Vectorizes as written.
namespace detc {
constexpr float kLog2e = 1.44269504088896341f;
constexpr float kLn2Hi = 0.693359375f;  // exact in 10 bits: n * kLn2Hi is exact
constexpr float kLn2Lo = -2.12194440e-4f;
constexpr float kMagic = 12582912.0f;   // 1.5 * 2^23: adding it rounds to an integer
constexpr float kLo = -87.0f, kHi = 88.0f, kInf = 88.7f;
constexpr float kP[8] = {1.0f / 5040, 1.0f / 720, 1.0f / 120, 1.0f / 24, 1.0f / 6, 0.5f, 1.0f, 1.0f};
constexpr float kGeluA = 0.7978845608028654f, kGeluB = 0.044715f;
}  // namespace detc

LS_HD inline float det_exp(float x) {
    using namespace detc;
    if (x != x) return x;  // NaN
    const float xc = detp::fmin(detp::fmax(x, kLo), kHi);
    const float t = xc * kLog2e + kMagic;
    const float n = t - kMagic;                 // round(x / ln 2)
    float r = detp::fma(-n, kLn2Hi, xc);
    r = detp::fma(-n, kLn2Lo, r);
    // kP's values, local so that device code can index them (kP[0] first, Horner order).
    constexpr float c[8] = {kP[0], kP[1], kP[2], kP[3], kP[4], kP[5], kP[6], kP[7]};
    float p = c[0];
    for (int i = 1; i < 8; ++i) p = detp::fma(p, r, c[i]);
    const int32_t bits = (detp::float_bits(t) - detp::float_bits(kMagic) + 127) << 23;  // 2^n, n in [-126, 127]
    const float scale = detp::bits_float(bits);
    float y = p * scale;
    if (x < kLo) y = 0.0f;
    if (x > kInf) y = INFINITY;
    return y;
}

// x * sigmoid(2u), u = sqrt(2/pi) (x + 0.044715 x^3): the tanh-approximated GELU,
// 0.5 x (1 + tanh(u)), written without tanh and without cancellation for x << 0.
LS_HD inline float det_gelu(float x) {
    const float u = detc::kGeluA * (x + detc::kGeluB * (x * x * x));
    return x / (1.0f + det_exp(-2.0f * u));
}

LS_HD inline float det_silu(float x) { return x / (1.0f + det_exp(-x)); }

// Sum of a[i] * b[i] with exact products accumulated in double in four interleaved partial
// sums (s[i mod 4]), combined as (s0 + s1) + (s2 + s3): a fixed order, with four independent
// chains a CPU overlaps (the delta-rule scan's row dots).
LS_HD inline float det_dot4(const float* a, const float* b, int64_t n) {
    double s0 = 0, s1 = 0, s2 = 0, s3 = 0;
    int64_t i = 0;
    for (; i + 4 <= n; i += 4) {
        s0 += double(a[i]) * double(b[i]);
        s1 += double(a[i + 1]) * double(b[i + 1]);
        s2 += double(a[i + 2]) * double(b[i + 2]);
        s3 += double(a[i + 3]) * double(b[i + 3]);
    }
    if (i < n) s0 += double(a[i]) * double(b[i]);
    if (i + 1 < n) s1 += double(a[i + 1]) * double(b[i + 1]);
    if (i + 2 < n) s2 += double(a[i + 2]) * double(b[i + 2]);
    return float((s0 + s1) + (s2 + s3));
}

// 1 / (1 + e^-x): gates of the hybrid (Qwen3-Next / Qwen3.5) models.
LS_HD inline float det_sigmoid(float x) { return 1.0f / (1.0f + det_exp(-x)); }

// log(1 + e^x), identity above 20 (as torch's softplus threshold). The log is taken in double
// and rounded to float: host and device log1p agree to within a double ulp, which changes the
// float result only on an exact rounding tie (never seen; the op tests compare bits).
LS_HD inline float det_softplus(float x) {
    if (x > 20.0f) return x;
    return float(log1p(double(det_exp(x))));
}

// tanh(y) = 2 sigmoid(2y) - 1 (absolute error ~1e-7; used for logit soft-capping).
LS_HD inline float det_tanh(float y) { return 2.0f / (1.0f + det_exp(-2.0f * y)) - 1.0f; }

// Sum of a[i] * b[i] with exact products, accumulated in double.
LS_HD inline float det_dot(const float* a, const float* b, int64_t n) {
    double s = 0;
    for (int64_t i = 0; i < n; ++i) s += double(a[i]) * double(b[i]);
    return float(s);
}

}  // namespace ls
