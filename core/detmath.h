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

namespace ls {

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

inline float det_exp(float x) {
    using namespace detc;
    if (x != x) return x;  // NaN
    const float xc = std::fmin(std::fmax(x, kLo), kHi);
    const float t = xc * kLog2e + kMagic;
    const float n = t - kMagic;                 // round(x / ln 2)
    float r = std::fma(-n, kLn2Hi, xc);
    r = std::fma(-n, kLn2Lo, r);
    float p = kP[0];
    for (int i = 1; i < 8; ++i) p = std::fma(p, r, kP[i]);
    int32_t ti;
    std::memcpy(&ti, &t, 4);
    int32_t mi;
    std::memcpy(&mi, &kMagic, 4);
    const int32_t bits = (ti - mi + 127) << 23;  // 2^n, n in [-126, 127]
    float scale;
    std::memcpy(&scale, &bits, 4);
    float y = p * scale;
    if (x < kLo) y = 0.0f;
    if (x > kInf) y = INFINITY;
    return y;
}

// x * sigmoid(2u), u = sqrt(2/pi) (x + 0.044715 x^3): the tanh-approximated GELU,
// 0.5 x (1 + tanh(u)), written without tanh and without cancellation for x << 0.
inline float det_gelu(float x) {
    const float u = detc::kGeluA * (x + detc::kGeluB * (x * x * x));
    return x / (1.0f + det_exp(-2.0f * u));
}

inline float det_silu(float x) { return x / (1.0f + det_exp(-x)); }

// tanh(y) = 2 sigmoid(2y) - 1 (absolute error ~1e-7; used for logit soft-capping).
inline float det_tanh(float y) { return 2.0f / (1.0f + det_exp(-2.0f * y)) - 1.0f; }

// Sum of a[i] * b[i] with exact products, accumulated in double.
inline float det_dot(const float* a, const float* b, int64_t n) {
    double s = 0;
    for (int64_t i = 0; i < n; ++i) s += double(a[i]) * double(b[i]);
    return float(s);
}

}  // namespace ls
