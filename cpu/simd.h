// Small SIMD building blocks shared by the CPU kernels: the canonical arithmetic of
// core/rules/canon.h on vectors. Each one performs, lane by lane, the same IEEE operations in
// the same order as its scalar definition there, so the op tests (byte for byte against
// core/ref) hold them to it.
#pragma once
#include <cstdint>
#include <type_traits>

#include <xsimd/xsimd.hpp>
#if defined(__AVX__) || defined(__AVX512F__)
#include <immintrin.h>
#endif

#include "core/rules/canon.h"

namespace ls::cpu::simd {

using fbatch = xsimd::batch<float>;
constexpr int64_t W = int64_t(fbatch::size);

// ---- canon_sum (canon.h rule 5) in registers
// The 32 partial sums are lanes: element i of a sum goes to lane i mod 32. AVX-512 holds them
// in two 16-float registers, AVX2 in four 8-float ones (register c = lanes 8c..8c+7); a chunk
// of VW consecutive elements starting at a multiple of VW is then one register's worth, added
// to register (i / VW) mod NR. The fixed tree s[l] += s[l + w] (w = 16, 8, 4, 2, 1) is, in
// registers: w = 16 adds register pairs (z0 + z1; r0 + r2, r1 + r3), w = 8 the two 8-lane
// halves, then 4, 2, 1 inside one 128-bit register.
#if defined(__AVX512F__)
using vecf = __m512;
constexpr int VW = 16;
inline vecf vzero() { return _mm512_setzero_ps(); }
inline vecf vadd(vecf a, vecf b) { return _mm512_add_ps(a, b); }
inline vecf vmul(vecf a, vecf b) { return _mm512_mul_ps(a, b); }
inline vecf vload(const float* p) { return _mm512_loadu_ps(p); }
inline vecf vset1(float x) { return _mm512_set1_ps(x); }
inline vecf vload_f16(const uint16_t* p) { return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p))); }
inline vecf vload_bf16(const uint16_t* p) {
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p))), 16));
}
inline void vstore(float* p, vecf v) { _mm512_storeu_ps(p, v); }
#elif defined(__AVX2__) && defined(__F16C__)
using vecf = __m256;
constexpr int VW = 8;
inline vecf vzero() { return _mm256_setzero_ps(); }
inline vecf vadd(vecf a, vecf b) { return _mm256_add_ps(a, b); }
inline vecf vmul(vecf a, vecf b) { return _mm256_mul_ps(a, b); }
inline vecf vload(const float* p) { return _mm256_loadu_ps(p); }
inline vecf vset1(float x) { return _mm256_set1_ps(x); }
inline vecf vload_f16(const uint16_t* p) { return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))); }
inline vecf vload_bf16(const uint16_t* p) {
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))), 16));
}
inline void vstore(float* p, vecf v) { _mm256_storeu_ps(p, v); }
#endif

#if defined(__AVX512F__) || (defined(__AVX2__) && defined(__F16C__))
#define LS_CPU_CANON_SIMD 1
constexpr int NR = 32 / VW;  // registers of partial sums

// The tree's last steps over lanes 0..7 of one register (w = 4, 2, 1).
inline float tree8(__m256 u) {
    __m128 v = _mm_add_ps(_mm256_castps256_ps128(u), _mm256_extractf128_ps(u, 1));  // l += l + 4
    v = _mm_add_ps(v, _mm_movehl_ps(v, v));                                          // l += l + 2
    v = _mm_add_ss(v, _mm_movehdup_ps(v));                                           // l += l + 1
    return _mm_cvtss_f32(v);
}
// The fixed tree over four 8-lane registers (lanes 0-7, 8-15, 16-23, 24-31).
inline float tree32(__m256 r0, __m256 r1, __m256 r2, __m256 r3) {
    return tree8(_mm256_add_ps(_mm256_add_ps(r0, r2), _mm256_add_ps(r1, r3)));
}
inline float tree(const vecf* r) {
#if defined(__AVX512F__)
    const __m512 t = _mm512_add_ps(r[0], r[1]);  // w = 16
    const __m256 lo = _mm512_castps512_ps256(t);
    const __m256 hi = _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(t), 1));
    return tree8(_mm256_add_ps(lo, hi));  // w = 8, then 4, 2, 1
#else
    return tree32(r[0], r[1], r[2], r[3]);
#endif
}

// canon_sum_of(n, term) with vterm(i) giving the VW terms i..i+VW-1 (i a multiple of VW) as a
// register and sterm(i) the scalar term i (the tail past the last whole register).
template <class VTerm, class STerm>
inline float canon_sum_v(int64_t n, VTerm vterm, STerm sterm) {
    vecf r[NR];
    for (auto& x : r) x = vzero();
    int64_t i = 0;
    for (; i + 32 <= n; i += 32)
        for (int c = 0; c < NR; ++c) r[c] = vadd(r[c], vterm(i + c * VW));
    for (int c = 0; i + VW <= n; i += VW, ++c) r[c] = vadd(r[c], vterm(i));
    if (i == n) return tree(r);
    alignas(64) float s[32];
    for (int c = 0; c < NR; ++c) vstore(s + c * VW, r[c]);
    for (; i < n; ++i) s[i % 32] = s[i % 32] + sterm(i);
    return canon_tree(s);
}
#endif

// canon_sum(a, n) of core/rules/canon.h.
inline float canon_sum(const float* a, int64_t n) {
#if defined(LS_CPU_CANON_SIMD)
    return canon_sum_v(n, [&](int64_t i) { return vload(a + i); }, [&](int64_t i) { return a[i]; });
#else
    return ls::canon_sum(a, n);
#endif
}

// canon_dot(a, b, n) of core/rules/canon.h.
inline float canon_dot(const float* a, const float* b, int64_t n) {
#if defined(LS_CPU_CANON_SIMD)
    return canon_sum_v(n, [&](int64_t i) { return vmul(vload(a + i), vload(b + i)); }, [&](int64_t i) { return a[i] * b[i]; });
#else
    return ls::canon_dot(a, b, n);
#endif
}

// det_exp / det_gelu / det_silu / det_tanh (core/rules/canon.h) on batches: the same IEEE
// operations in the same order (a product rounded, then the sum: no fused multiply-add), so
// each lane equals the scalar definition bit for bit.
inline fbatch det_exp(fbatch x) {
    using namespace detc;
    using ibatch = xsimd::batch<int32_t>;
    const fbatch xc = xsimd::min(xsimd::max(x, fbatch(kLo)), fbatch(kHi));
    const fbatch t = xc * fbatch(kLog2e) + fbatch(kMagic);
    const fbatch n = t - fbatch(kMagic);
    fbatch r = xc - n * fbatch(kLn2Hi);
    r = r - n * fbatch(kLn2Lo);
    fbatch p(kP[0]);
    for (int i = 1; i < 8; ++i) p = p * r + fbatch(kP[i]);
    const ibatch bits = (xsimd::bitwise_cast<ibatch>(t) - xsimd::bitwise_cast<ibatch>(fbatch(kMagic)) + ibatch(127)) << 23;
    fbatch y = p * xsimd::bitwise_cast<fbatch>(bits);
    y = xsimd::select(x < fbatch(kLo), fbatch(0.0f), y);
    y = xsimd::select(x > fbatch(kInf), fbatch(INFINITY), y);
    return xsimd::select(x != x, x, y);
}
inline float det_exp(float x) { return ls::det_exp(x); }

// Division is correctly rounded on both forms (divps, the scalar /): canon_div.
template <class T> T det_gelu(T x) {
    const T u = T(detc::kGeluA) * (x + T(detc::kGeluB) * (x * x * x));
    return x / (T(1.0f) + det_exp(T(-2.0f) * u));
}
template <class T> T det_silu(T x) { return x / (T(1.0f) + det_exp(-x)); }
template <class T> T det_gelu_erf(T x) {
    using namespace detc;
    const T z = xsimd::min(xsimd::max(x, -x), T(10.0f)) * T(kRsqrt2);
    const T t = T(1.0f) / (T(1.0f) + T(kErfP) * z);
    T p(kErfA[0]);
    for (int i = 1; i < 5; ++i) p = p * t + T(kErfA[i]);
    const T q = (p * t) * det_exp(-(z * z));
    if constexpr (std::is_same_v<T, float>) return (0.5f * x) * (x >= 0.0f ? 2.0f - q : q);
    else return (T(0.5f) * x) * xsimd::select(x >= T(0.0f), T(2.0f) - q, q);
}
template <class T> T det_tanh(T y) { return T(2.0f) / (T(1.0f) + det_exp(T(-2.0f) * y)) - T(1.0f); }

}  // namespace ls::cpu::simd
