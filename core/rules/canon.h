// The canonical arithmetic: float32 and int32 only, the same sequence of IEEE operations on
// every backend, so that backends produce the same bits, not merely close values. It matters
// more than it seems: activations are quantized to 8 bits before every matmul, and Gemma's
// outlier features make the quantization step large, so a 1-ulp difference that moves one
// value across a rounding step can change a logit by a whole unit several layers later.
//
// The contract (every backend follows it; core/ref is its plain statement):
//  1. Only float32 +, -, *, / and sqrt, each rounded once to nearest even (IEEE), integer
//     arithmetic in 32 bits, min/max, and bit manipulation. No float64 and no int64 in any
//     kernel, so Vulkan needs neither shaderFloat64 nor shaderInt64.
//  2. No fma anywhere: a*b+c is a product rounded, then a sum rounded. Compilers must not
//     contract (-ffp-contract=off, nvcc -fmad=false, GLSL `precise`). The same definition is
//     then cheap on every device: Vulkan does not promise a fused fma, and emulating one costs
//     more than the roundings it saves.
//  3. Division and square root are correctly rounded. The CPU's and CUDA's native ones are;
//     Vulkan allows 2.5 ulp, so its shaders compute them exactly in int32
//     (shaders/canon.glsl, checked against the host on every op case).
//  4. exp, GELU, SiLU, sigmoid, tanh and softplus are the det_* functions below, built from
//     the operations of rule 1 (never a platform's exp/log/tanh: libm, xsimd, CUDA and GLSL
//     differ in the last bits).
//  5. Reductions (dot products, sums of squares, softmax sums) are canon_sum: kCanonLanes = 32
//     interleaved partial sums, element i added to partial i mod 32 in increasing i (each
//     starting from +0), then combined by a fixed tree, s[l] += s[l + w] for w = 16, 8, 4, 2, 1.
//     32 lanes are four AVX2 registers, two AVX-512 registers, one CUDA warp (the tree is
//     __shfl_down by 16, 8, 4, 2, 1), or 32 invocations of a Vulkan workgroup whatever its
//     subgroup size (8, 16, 32 or 64 lanes give the same bits: the order is by element index,
//     never by lane of the device).
//  6. Quantized dot products: exact int32 block sums, then per block in order
//     sum = sum + (d_w * d_a) * float(isum) (core/quant, core/ref/mul_mat.cpp).
//  7. Attention over fixed key blocks (core/rules/attention_rule.h): each block of
//     kAttnBlock key positions gives a partial (max, sum, weighted values) that depends only on
//     that block, and partials fold in increasing block order, so blocks can run in parallel
//     (threads, workgroups, CUDA blocks) and still give the reference's bits.
// Sub-normal floats are kept (no flush to zero) on the CPU and CUDA; see README "Backends" for
// what Vulkan devices must offer.
#pragma once
#include <cmath>
#include <cstdint>
#include <cstring>

#include "core/rules/hd.h"

// The same definitions compile for CUDA kernels (backends/cuda/) through LS_HD, and the few
// primitives below pick the device intrinsic that performs the identical IEEE operation.
namespace ls {

namespace detp {
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

// Rule 3: a / b and sqrt(x), correctly rounded (IEEE). Written as functions so that the
// places that divide are easy to find in every backend.
LS_HD inline float canon_div(float a, float b) {
#if defined(__CUDA_ARCH__)
    return __fdiv_rn(a, b);
#else
    return a / b;
#endif
}
LS_HD inline float canon_sqrt(float x) {
#if defined(__CUDA_ARCH__)
    return __fsqrt_rn(x);
#else
    return std::sqrt(x);
#endif
}

// ---- rule 5: the canonical sum
constexpr int kCanonLanes = 32;

// The fixed tree over the 32 partial sums: s[l] += s[l + w] for w = 16, 8, 4, 2, 1.
LS_HD inline float canon_tree(float* s) {
    for (int w = kCanonLanes / 2; w >= 1; w /= 2)
        for (int l = 0; l < w; ++l) s[l] = s[l] + s[l + w];
    return s[0];
}

// Sum of term(i) for i in [0, n): term i goes to partial sum i mod 32, in increasing i.
template <class Term>
LS_HD inline float canon_sum_of(int64_t n, Term term) {
    float s[kCanonLanes];
    for (int l = 0; l < kCanonLanes; ++l) s[l] = 0.0f;
    for (int64_t i = 0; i < n; ++i) s[i % kCanonLanes] = s[i % kCanonLanes] + term(i);
    return canon_tree(s);
}

// Sum of a[i] * b[i] (each product rounded, then added): every dot product of the engine
// whose inputs are floats (attention scores, float weights, the delta rule, sums of squares).
LS_HD inline float canon_dot(const float* a, const float* b, int64_t n) {
    return canon_sum_of(n, [&](int64_t i) { return a[i] * b[i]; });
}
LS_HD inline float canon_sum(const float* a, int64_t n) {
    return canon_sum_of(n, [&](int64_t i) { return a[i]; });
}

// ---- rule 4: elementary functions
// e^x to within 2 ulp for x in [-87, 88]; 0 below -87, +inf above 88.7. Range reduction by
// ln 2 (Cody-Waite: n * kLn2Hi is exact for |n| <= 127 and x - n * kLn2Hi is exact, so no fma
// is needed), degree-7 Taylor polynomial on |r| <= ln2/2 in Horner form (truncation error
// < 6e-9 relative), scaling by 2^n through the exponent bits. Vectorizes as written.
namespace detc {
constexpr float kLog2e = 1.44269504088896341f;
constexpr float kLn2Hi = 0.693359375f;  // 355/512: n * kLn2Hi is exact
constexpr float kLn2Lo = -2.12194440e-4f;
constexpr float kMagic = 12582912.0f;   // 1.5 * 2^23: adding it rounds to an integer
constexpr float kLo = -87.0f, kHi = 88.0f, kInf = 88.7f;
constexpr float kP[8] = {1.0f / 5040, 1.0f / 720, 1.0f / 120, 1.0f / 24, 1.0f / 6, 0.5f, 1.0f, 1.0f};
constexpr float kGeluA = 0.7978845608028654f, kGeluB = 0.044715f;
// erf-GELU: Abramowitz & Stegun 7.1.26, erfc(z) = t (a1 + t (a2 + t (a3 + t (a4 + t a5)))) e^-z^2,
// t = 1 / (1 + p z), z >= 0 (absolute error below 1.5e-7); 1/sqrt(2) rounded to float.
constexpr float kErfP = 0.3275911f;
constexpr float kErfA[5] = {1.061405429f, -1.453152027f, 1.421413741f, -0.284496736f, 0.254829592f};  // a5 .. a1
constexpr float kRsqrt2 = 0.7071067811865476f;
// log: atanh series coefficients 1/9, 1/7, 1/5, 1/3, 1 (Horner order) and sqrt(2).
constexpr float kL[5] = {1.0f / 9, 1.0f / 7, 1.0f / 5, 1.0f / 3, 1.0f};
constexpr float kSqrt2 = 1.41421356237309505f;
}  // namespace detc

LS_HD inline float det_exp(float x) {
    using namespace detc;
    if (x != x) return x;  // NaN
    const float xc = detp::fmin(detp::fmax(x, kLo), kHi);
    const float t = xc * kLog2e + kMagic;
    const float n = t - kMagic;  // round(x / ln 2)
    float r = xc - n * kLn2Hi;
    r = r - n * kLn2Lo;
    // kP's values, local so that device code can index them (kP[0] first, Horner order).
    constexpr float c[8] = {kP[0], kP[1], kP[2], kP[3], kP[4], kP[5], kP[6], kP[7]};
    float p = c[0];
    for (int i = 1; i < 8; ++i) p = p * r + c[i];
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
    return canon_div(x, 1.0f + det_exp(-2.0f * u));
}

LS_HD inline float det_silu(float x) { return canon_div(x, 1.0f + det_exp(-x)); }

// The exact (erf) GELU, 0.5 x (1 + erf(x / sqrt 2)) (torch's nn.GELU(), the Qwen-VL merger's):
// with q = erfc(|z|) (kErfA above), 1 + erf(z) is 2 - q for z >= 0 and q itself below, so the
// negative side has no cancellation.
LS_HD inline float det_gelu_erf(float x) {
    using namespace detc;
    const float z = detp::fmin(detp::fmax(x, -x), 10.0f) * kRsqrt2;  // |x| / sqrt 2 (erfc(7) < 1e-21)
    const float t = canon_div(1.0f, 1.0f + kErfP * z);
    constexpr float ca[5] = {kErfA[0], kErfA[1], kErfA[2], kErfA[3], kErfA[4]};
    float p = ca[0];
    for (int i = 1; i < 5; ++i) p = p * t + ca[i];
    const float q = (p * t) * det_exp(-(z * z));
    const float phi2 = x >= 0.0f ? 2.0f - q : q;
    return (0.5f * x) * phi2;
}

// 1 / (1 + e^-x): gates of the hybrid (Qwen3-Next / Qwen3.5) models.
LS_HD inline float det_sigmoid(float x) { return canon_div(1.0f, 1.0f + det_exp(-x)); }

// tanh(y) = 2 sigmoid(2y) - 1 (absolute error ~1e-7; used for logit soft-capping).
LS_HD inline float det_tanh(float y) { return canon_div(2.0f, 1.0f + det_exp(-2.0f * y)) - 1.0f; }

// log(1 + y) for y >= 0 (finite), to within a few ulp: u = 1 + y and its rounding error
// c = y - (u - 1); u = m 2^e with m in [sqrt(1/2), sqrt(2)) from the bits; log m = 2 atanh(s),
// s = (m - 1) / (m + 1) (|s| < 0.172, five terms of the odd series reach 2^-27); the result
// e ln2 + log m + c / u with e * kLn2Hi exact. Tiny y gives y itself (u = 1, c = y).
LS_HD inline float det_log1p(float y) {
    using namespace detc;
    const float u = 1.0f + y;
    const float c = y - (u - 1.0f);
    const int32_t ub = detp::float_bits(u);
    int32_t e = (ub >> 23) - 127;
    float m = detp::bits_float((ub & 0x7FFFFF) | 0x3F800000);  // [1, 2)
    if (m > kSqrt2) {
        m = m * 0.5f;
        e = e + 1;
    }
    const float f = m - 1.0f;  // exact (Sterbenz)
    const float s = canon_div(f, 2.0f + f);
    const float s2 = s * s;
    // kL's values, local so that device code can index them (as det_exp's kP).
    constexpr float cl[5] = {kL[0], kL[1], kL[2], kL[3], kL[4]};
    float p = cl[0];
    for (int i = 1; i < 5; ++i) p = p * s2 + cl[i];
    const float logm = (2.0f * s) * p;
    const float fe = float(e);
    return fe * kLn2Hi + (fe * kLn2Lo + (logm + canon_div(c, u)));
}

// log(1 + e^x), identity above 20 (as torch's softplus threshold).
LS_HD inline float det_softplus(float x) {
    if (x > 20.0f) return x;
    return det_log1p(det_exp(x));
}

}  // namespace ls
