// Shared by every shader: buffer-address access, the exact conversions and the
// deterministic math of core/rules/detmath.h and core/quant/quant.cpp, operation for operation.
//
// Vulkan only promises correctly rounded +, -, * and conversions from integers; division is
// allowed 2.5 ulp, sqrt is inherited from inversesqrt, and f32->f16 rounding is
// implementation-defined. Where the reference divides, takes a square root or rounds to
// f16/f32 from a wider type, the functions below compute the correctly rounded result
// explicitly. Every float expression that must not be contracted into an fma is `precise`.
#extension GL_EXT_buffer_reference2 : require
#extension GL_EXT_shader_explicit_arithmetic_types : require
#extension GL_EXT_shader_8bit_storage : require
#extension GL_EXT_shader_16bit_storage : require
// LS_TYPE_*: the GGUF type ids of the `type` push-constant fields and the WTYPE / ATYPE
// defines of the variants (one definition for C++, CUDA, GLSL and CMake).
#include "core/quant/dtype_ids.h"

// NATIVE_FMA: set at pipeline creation when the device's fma() was proven fused by the probe
// at device init (shaders/fma_probe.comp, Context::probe_fma); false keeps the emulation.
layout(constant_id = 0) const bool NATIVE_FMA = false;
// NATIVE_D2F: likewise for double -> float conversion, when the probe proved it rounds to
// nearest even with subnormals, overflow, infinities and NaN as core/ref does.
layout(constant_id = 1) const bool NATIVE_D2F = false;
// The device's subgroup size, subgroup operations in compute (VK_SUBGROUP_FEATURE_*_BIT)
// and shared memory per workgroup in bytes, as queried at init (backends/vulkan/vk_device.cpp).
layout(constant_id = 2) const uint SUBGROUP_SIZE = 1u;
layout(constant_id = 3) const uint SUBGROUP_OPS = 0u;
layout(constant_id = 4) const uint SHARED_BYTES = 16384u;

layout(buffer_reference, std430, buffer_reference_align = 1) buffer U8 { uint8_t v[]; };
layout(buffer_reference, std430, buffer_reference_align = 2) buffer U16 { uint16_t v[]; };
layout(buffer_reference, std430, buffer_reference_align = 1) buffer I8 { int8_t v[]; };
layout(buffer_reference, std430, buffer_reference_align = 4) buffer F32 { float v[]; };
layout(buffer_reference, std430, buffer_reference_align = 4) buffer I32 { int v[]; };
layout(buffer_reference, std430, buffer_reference_align = 4) buffer U32 { uint v[]; };

uint ld8(uint64_t a, uint i) { return uint(U8(a).v[i]); }
int lds8(uint64_t a, uint i) { return int(I8(a).v[i]); }
uint ld16(uint64_t a, uint i) { return ld8(a, i) | (ld8(a, i + 1) << 8); }
int lds16(uint64_t a, uint i) { return int(ld16(a, i) << 16) >> 16; }
uint ld32(uint64_t a, uint i) { return ld16(a, i) | (ld16(a, i + 2) << 16); }
// Wide loads at an even address p (p % 4 == 0 or 2): 32 / 16 bytes as little-endian words,
// with aligned 32-bit loads (a 2-aligned start takes a 16-bit load at each end) and never a
// byte outside [p, p + n).
void ldw8(uint64_t p, out uint w[8]) {
    if ((uint(p) & 3u) == 0u) {
        for (uint i = 0u; i < 8u; ++i) w[i] = U32(p).v[i];
    } else {
        uint prev = uint(U16(p).v[0]);
        const uint64_t q = p + 2u;
        for (uint i = 0u; i < 7u; ++i) {
            const uint x = U32(q).v[i];
            w[i] = prev | (x << 16);
            prev = x >> 16;
        }
        w[7] = prev | (uint(U16(p + 30u).v[0]) << 16);
    }
}
void ldw4(uint64_t p, out uint w[4]) {
    if ((uint(p) & 3u) == 0u) {
        for (uint i = 0u; i < 4u; ++i) w[i] = U32(p).v[i];
    } else {
        uint prev = uint(U16(p).v[0]);
        const uint64_t q = p + 2u;
        for (uint i = 0u; i < 3u; ++i) {
            const uint x = U32(q).v[i];
            w[i] = prev | (x << 16);
            prev = x >> 16;
        }
        w[3] = prev | (uint(U16(p + 14u).v[0]) << 16);
    }
}
uint ldw1(uint64_t p) {
    if ((uint(p) & 3u) == 0u) return U32(p).v[0];
    return uint(U16(p).v[0]) | (uint(U16(p + 2u).v[0]) << 16);
}
uint ldh(uint64_t p) { return uint(U16(p).v[0]); }  // p even
// Signed byte k of a word.
int sb(uint w, uint k) { return int(w << (24u - 8u * k)) >> 24; }

void st8(uint64_t a, uint i, uint v) { U8(a).v[i] = uint8_t(v); }
void st16(uint64_t a, uint i, uint v) { st8(a, i, v & 0xFFu); st8(a, i + 1, v >> 8); }

// ---- conversions (core/quant/quant.cpp fp16_to_fp32 / fp32_to_fp16 / bf16, bit for bit)
float h2f(uint h) {
    const uint sign = (h & 0x8000u) << 16;
    const uint e = (h >> 10) & 0x1Fu;
    const uint mant = h & 0x3FFu;
    if (e == 0u) {
        precise float v = float(mant) * uintBitsToFloat(0x33800000u);  // * 2^-24, exact
        return uintBitsToFloat(floatBitsToUint(v) | sign);
    }
    if (e == 31u) return uintBitsToFloat(sign | 0x7F800000u | (mant << 13));
    return uintBitsToFloat(sign | ((e + 112u) << 23) | (mant << 13));
}

uint f2h(float f) {
    const uint x = floatBitsToUint(f);
    const uint sign = (x >> 16) & 0x8000u;
    const uint ax = x & 0x7FFFFFFFu;
    if (ax >= 0x7F800000u) {
        if (ax == 0x7F800000u) return sign | 0x7C00u;
        return sign | 0x7E00u | ((ax >> 13) & 0x3FFu);
    }
    if (ax >= 0x477FF000u) return sign | 0x7C00u;
    if (ax < 0x38800000u) {
        if (ax < 0x33000000u) return sign;
        const uint e = ax >> 23;
        const uint m = (ax & 0x7FFFFFu) | 0x800000u;
        const uint shift = 126u - e;
        uint r = m >> shift;
        const uint rem = m & ((1u << shift) - 1u);
        const uint half_ = 1u << (shift - 1u);
        if (rem > half_ || (rem == half_ && (r & 1u) != 0u)) ++r;
        return sign | r;
    }
    uint h = (((ax >> 23) - 112u) << 10) | ((ax >> 13) & 0x3FFu);
    const uint rem = ax & 0x1FFFu;
    if (rem > 0x1000u || (rem == 0x1000u && (h & 1u) != 0u)) ++h;
    return sign | h;
}

float bf2f(uint h) { return uintBitsToFloat(h << 16); }
uint f2bf(float f) {
    const uint x = floatBitsToUint(f);
    if ((x & 0x7FFFFFFFu) > 0x7F800000u) return ((x >> 16) | 0x40u) & 0xFFFFu;
    return ((x + 0x7FFFu + ((x >> 16) & 1u)) >> 16) & 0xFFFFu;
}

// double -> float, round to nearest even, from the bits (subnormals, inf and NaN included).
float d2f(double x) {
    if (NATIVE_D2F) return float(x);
    const uvec2 u = unpackDouble2x32(x);
    const uint sign = u.y & 0x80000000u;
    const uint ahi = u.y & 0x7FFFFFFFu;
    const int e = int(ahi >> 20);
    if (e == 0x7FF) return uintBitsToFloat(sign | 0x7F800000u | (((ahi & 0xFFFFFu) | u.x) != 0u ? 0x400000u : 0u));
    uint64_t m = packUint2x32(uvec2(u.x, ahi & 0xFFFFFu));
    if (e != 0) m |= uint64_t(1) << 52;
    const int fe = e - 896;  // float biased exponent
    if (fe >= 255) return uintBitsToFloat(sign | 0x7F800000u);
    int shift = 29;
    uint64_t base = 0;
    if (fe >= 1) {
        base = uint64_t(fe - 1) << 23;  // the implicit bit of m adds the last exponent step
    } else {
        shift = 29 + 1 - fe;  // subnormal result: units of 2^-149
        if (shift > 60) return uintBitsToFloat(sign);
    }
    uint64_t r = m >> shift;
    const uint64_t rem = m & ((uint64_t(1) << shift) - 1);
    const uint64_t half_ = uint64_t(1) << (shift - 1);
    if (rem > half_ || (rem == half_ && (r & 1) != 0)) ++r;
    r += base;
    if (r >= uint64_t(0x7F800000u)) return uintBitsToFloat(sign | 0x7F800000u);
    return uintBitsToFloat(sign | uint(r));
}

// fma(a, b, c) for floats, rounded once. GLSL's fma() may be a multiply and an add
// (Vulkan lets it inherit their two roundings; lavapipe does so), so: the product is exact
// in double, the double sum's error comes from TwoSum, the sum is rounded to odd in double
// and then to float, which rounds the exact a*b+c once (double has 29 > 2 spare bits).
float fma_rn(float a, float b, float c) {
    if (NATIVE_FMA) {
        precise float r = fma(a, b, c);
        return r;
    }
    precise double p = double(a) * double(b);
    precise double dc = double(c);
    precise double s = p + dc;
    precise double bb = s - p;
    precise double err = (p - (s - bb)) + (dc - bb);
    if (err != 0.0) {
        uvec2 u = unpackDouble2x32(s);
        if ((u.x & 1u) == 0u) {
            uint64_t bits = packUint2x32(u);
            bits = ((err > 0.0) == (s > 0.0)) ? bits + 1 : bits - 1;
            s = packDouble2x32(unpackUint2x32(bits));
        }
    }
    return d2f(s);
}

// a / b correctly rounded (floats): the double quotient of two floats is never within 2^-48
// (relative) of a float rounding midpoint, far more than the device's division error.
float div_rn(float a, float b) { return d2f(double(a) / double(b)); }

// a / b in double. The device's double quotient is used as it is: lavapipe (LLVM) and
// NVIDIA divide doubles with IEEE rounding; a device that did not would show in the bitwise
// op tests of softmax, rms_norm and attention (tests/ops/test_ops.cpp). A residual correction
// would need an fma that is really fused, which Vulkan does not promise (see fma_rn).
double ddiv_rn(double a, double b) { return a / b; }

// sqrt(x) correctly rounded for x > 0 (normal): the device's root, moved to the float
// whose rounding interval holds x (interval ends squared exactly in double).
float sqrt_rn(float x) {
    float s = sqrt(x);
    const double dx = double(x);
    for (int it = 0; it < 3; ++it) {
        const float lo = uintBitsToFloat(floatBitsToUint(s) - 1u), hi = uintBitsToFloat(floatBitsToUint(s) + 1u);
        precise double mlo = (double(s) + double(lo)) * 0.5, mhi = (double(s) + double(hi)) * 0.5;
        if (dx < mlo * mlo) s = lo;
        else if (dx > mhi * mhi) s = hi;
        else break;
    }
    return s;
}

// ---- core/rules/detmath.h
#define kLog2e uintBitsToFloat(0x3fb8aa3bu)
#define kLn2Hi uintBitsToFloat(0x3f318000u)
#define kLn2Lo uintBitsToFloat(0xb95e8083u)
#define kMagic uintBitsToFloat(0x4b400000u)
#define kExpLo uintBitsToFloat(0xc2ae0000u)  // -87
#define kExpHi uintBitsToFloat(0x42b00000u)  // 88
#define kExpInf uintBitsToFloat(0x42b16666u) // 88.7f
#define kGeluA uintBitsToFloat(0x3f4c422au)
#define kGeluB uintBitsToFloat(0x3d372713u)

float det_exp(float x) {
    if (isnan(x)) return x;
    const float xc = min(max(x, kExpLo), kExpHi);
    precise float t = xc * kLog2e + kMagic;
    precise float n = t - kMagic;
    precise float r = fma_rn(-n, kLn2Hi, xc);
    r = fma_rn(-n, kLn2Lo, r);
    precise float p = uintBitsToFloat(0x39500d01u);
    p = fma_rn(p, r, uintBitsToFloat(0x3ab60b61u));
    p = fma_rn(p, r, uintBitsToFloat(0x3c088889u));
    p = fma_rn(p, r, uintBitsToFloat(0x3d2aaaabu));
    p = fma_rn(p, r, uintBitsToFloat(0x3e2aaaabu));
    p = fma_rn(p, r, 0.5);
    p = fma_rn(p, r, 1.0);
    p = fma_rn(p, r, 1.0);
    const int bits = (floatBitsToInt(t) - floatBitsToInt(kMagic) + 127) << 23;
    precise float y = p * intBitsToFloat(bits);
    if (x < kExpLo) y = 0.0;
    if (x > kExpInf) y = uintBitsToFloat(0x7F800000u);
    return y;
}

float det_gelu(float x) {
    precise float u = kGeluA * (x + kGeluB * (x * x * x));
    precise float den = 1.0 + det_exp(-2.0 * u);
    return div_rn(x, den);
}

float det_silu(float x) {
    precise float den = 1.0 + det_exp(-x);
    return div_rn(x, den);
}

// 1 / (1 + e^-x): gates of the hybrid models (det_sigmoid).
float det_sigmoid(float x) {
    precise float den = 1.0 + det_exp(-x);
    return div_rn(1.0, den);
}

// log(1 + y) in double for y >= 0 (det_softplus's log1p). GLSL has no double logarithm, so:
// tiny y by its series; else u = 1 + y with its exact rounding error c (two-sum), frexp to
// m in [sqrt(1/2), sqrt(2)), log(m) = 2 atanh(f / (2 + f)) by its odd series (|s| < 0.172,
// 12 terms reach 2^-56), and e*ln2 with ln2 split so that e*ln2_hi is exact. The result is
// within a few double ulps of the host's log1p; rounded to float it differs only when the
// double value lies that close to a float rounding boundary (the op tests compare bits).
double log1p_d(double y) {
    if (y < 1.0e-5LF) {
        precise double t = y * (1.0LF / 3.0LF - y * 0.25LF);
        precise double r = y * (1.0LF - y * (0.5LF - t));
        return r;
    }
    precise double u = 1.0LF + y;
    precise double bb = u - 1.0LF;
    precise double c = (1.0LF - (u - bb)) + (y - bb);
    int e;
    double m = frexp(u, e);  // u = m * 2^e, m in [0.5, 1)
    if (m < 0.70710678118654752440LF) {
        m = m * 2.0LF;
        e = e - 1;
    }
    precise double f = m - 1.0LF;  // exact (Sterbenz)
    precise double s = f / (2.0LF + f);
    precise double s2 = s * s;
    precise double p = 1.0LF / 25.0LF;
    for (int k = 11; k >= 0; --k) p = 1.0LF / double(2 * k + 1) + s2 * p;
    const double ln2_hi = packDouble2x32(uvec2(0xFEE00000u, 0x3FE62E42u));  // 0x3FE62E42FEE00000
    const double ln2_lo = packDouble2x32(uvec2(0x35793C76u, 0x3DEA39EFu));
    precise double logm = 2.0LF * s * p;
    precise double r = double(e) * ln2_hi + (double(e) * ln2_lo + (logm + c / u));
    return r;
}

// log(1 + e^x), identity above 20 (det_softplus).
float det_softplus(float x) {
    if (x > 20.0) return x;
    return d2f(log1p_d(double(det_exp(x))));
}

float det_tanh(float y) {
    precise float den = 1.0 + det_exp(-2.0 * y);
    precise float r = div_rn(2.0, den) - 1.0;
    return r;
}

// ---- element e of a row of a cache / get_rows type (core/quant_*.cpp dequantizers)
float dequant_elem(uint type, uint64_t row, uint e) {
    if (type == LS_TYPE_F32) return F32(row).v[e];
    if (type == LS_TYPE_F16) return h2f(ldh(row + 2u * e));
    if (type == LS_TYPE_BF16) return bf2f(ldh(row + 2u * e));
    const uint j = e % 32u;
    if (type == LS_TYPE_Q4_0 || type == LS_TYPE_Q4_1 || type == LS_TYPE_Q5_0 || type == LS_TYPE_Q5_1 || type == LS_TYPE_Q8_0) {
        if (type == LS_TYPE_Q8_0) {
            const uint64_t b = row + uint64_t(e / 32u) * 34u;
            precise float v = h2f(ld16(b, 0u)) * float(lds8(b, 2u + j));
            return v;
        }
        const uint bs = type == LS_TYPE_Q4_0 ? 18u : type == LS_TYPE_Q4_1 ? 20u : type == LS_TYPE_Q5_0 ? 22u : 24u;
        const uint64_t b = row + uint64_t(e / 32u) * bs;
        const uint qs = type == LS_TYPE_Q4_0 ? 2u : type == LS_TYPE_Q4_1 ? 4u : type == LS_TYPE_Q5_0 ? 6u : 8u;
        int q = int(j < 16u ? (ld8(b, qs + j) & 15u) : (ld8(b, qs + j - 16u) >> 4));
        if (type == LS_TYPE_Q5_0 || type == LS_TYPE_Q5_1) {
            const uint qhoff = type == LS_TYPE_Q5_0 ? 2u : 4u;
            q |= int((ld32(b, qhoff) >> j) & 1u) << 4;
        }
        const float d = h2f(ld16(b, 0u));
        if (type == LS_TYPE_Q4_0) { precise float v = d * float(q - 8); return v; }
        if (type == LS_TYPE_Q5_0) { precise float v = d * float(q - 16); return v; }
        precise float v = d * float(q) + h2f(ld16(b, 2u));
        return v;
    }
    const uint64_t bk = row + uint64_t(e / 256u) * (type == LS_TYPE_Q2_K ? 84u : type == LS_TYPE_Q3_K ? 110u : type == LS_TYPE_Q4_K ? 144u
                                                   : type == LS_TYPE_Q5_K ? 176u : type == LS_TYPE_Q6_K ? 210u : 292u);
    const uint el = e % 256u;
    if (type == LS_TYPE_Q2_K) {
        const uint n = el / 128u, jj = (el % 128u) / 32u, l = el % 32u;
        const uint sc = ld8(bk, el / 16u);
        precise float dl = h2f(ld16(bk, 80u)) * float(sc & 15u);
        precise float ml = h2f(ld16(bk, 82u)) * float(sc >> 4);
        const uint q = (ld8(bk, 16u + 32u * n + l) >> (2u * jj)) & 3u;
        precise float v = dl * float(q) - ml;
        return v;
    }
    if (type == LS_TYPE_Q3_K) {
        const uint n = el / 128u, jj = (el % 128u) / 32u, l = el % 32u;
        const int lo = int((ld8(bk, 32u + 32u * n + l) >> (2u * jj)) & 3u);
        const int hi = int((ld8(bk, l) >> (4u * n + jj)) & 1u);
        const uint si = el / 16u;
        const int slo = int(si < 8u ? (ld8(bk, 96u + si) & 15u) : (ld8(bk, 96u + si - 8u) >> 4));
        const int shi = int((ld8(bk, 96u + 8u + (si & 3u)) >> (2u * (si >> 2u))) & 3u);
        precise float dl = h2f(ld16(bk, 108u)) * float((slo | (shi << 4)) - 32);
        precise float v = dl * float(lo - (hi != 0 ? 0 : 4));
        return v;
    }
    if (type == LS_TYPE_Q4_K || type == LS_TYPE_Q5_K) {
        const uint s = el / 32u;
        uint sc, m;
        if (s < 4u) {
            sc = ld8(bk, 4u + s) & 63u;
            m = ld8(bk, 4u + s + 4u) & 63u;
        } else {
            sc = (ld8(bk, 4u + s + 4u) & 15u) | ((ld8(bk, 4u + s - 4u) >> 6) << 4);
            m = (ld8(bk, 4u + s + 4u) >> 4) | ((ld8(bk, 4u + s) >> 6) << 4);
        }
        const uint c = el / 64u, h = (el % 64u) / 32u, l = el % 32u;
        const uint qsoff = type == LS_TYPE_Q4_K ? 16u : 48u;
        uint q = (ld8(bk, qsoff + 32u * c + l) >> (4u * h)) & 15u;
        if (type == LS_TYPE_Q5_K) q |= ((ld8(bk, 16u + (el % 32u)) >> (el / 32u)) & 1u) << 4;
        precise float dl = h2f(ld16(bk, 0u)) * float(sc);
        precise float ml = h2f(ld16(bk, 2u)) * float(m);
        precise float v = dl * float(q) - ml;
        return v;
    }
    if (type == LS_TYPE_Q6_K) {
        const uint n = el / 128u, k = (el % 128u) / 32u, l = el % 32u;
        const uint lo = (ld8(bk, 64u * n + 32u * (k % 2u) + l) >> (4u * (k / 2u))) & 15u;
        const uint hi = (ld8(bk, 128u + 32u * n + l) >> (2u * k)) & 3u;
        precise float dl = h2f(ld16(bk, 208u)) * float(lds8(bk, 192u + el / 16u));
        precise float v = dl * float(int(lo | (hi << 4)) - 32);
        return v;
    }
    // Q8_K
    precise float v = uintBitsToFloat(ld32(bk, 0u)) * float(lds8(bk, 4u + el));
    return v;
}

// ---- converts 32 floats (one block) for set_rows destinations Q8_0 / Q4_0
#include "shaders/push.h"
