// Block arithmetic of the CUDA kernels, written once for host and device (LS_HD):
// element dequantization, the activation quantizers, and per-block integer sums with the
// float chain step of mul_mat. Each function follows its reference in core/quant_*.cpp
// operation for operation. Compiled by the host compiler too, so that
// tests/test_cuda_host.cpp checks it bit for bit against the reference without a GPU; the
// kernels only decide which thread runs which block, never the order of a float chain.
#pragma once
#include <cmath>
#include <cstdint>
#include <cstring>

#include "core/detmath.h"
#include "core/dtype.h"
#include "core/hd.h"
#include "core/quant.h"
#include "core/quant_blocks.h"

#if defined(__CUDACC__)
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#endif

namespace ls::cudaq {
using namespace ls::qb;

// ---------------------------------------------------------------- scalars

LS_HD inline float h2f(uint16_t h) {
#if defined(__CUDA_ARCH__)
    return __half2float(__ushort_as_half(h));  // exact, as fp16_to_fp32
#else
    return fp16_to_fp32(h);
#endif
}
LS_HD inline uint16_t f2h(float f) {
#if defined(__CUDA_ARCH__)
    return __half_as_ushort(__float2half_rn(f));  // round to nearest even, as fp32_to_fp16
#else
    return fp32_to_fp16(f);
#endif
}
LS_HD inline float bf2f(uint16_t h) { return detp::bits_float(int32_t(uint32_t(h) << 16)); }
// fp32_to_bf16 of core/quant.cpp, bit for bit.
LS_HD inline uint16_t f2bf(float f) {
    const uint32_t x = uint32_t(detp::float_bits(f));
    if ((x & 0x7FFFFFFFu) > 0x7F800000u) return static_cast<uint16_t>((x >> 16) | 0x40);  // quiet NaN
    return static_cast<uint16_t>((x + 0x7FFFu + ((x >> 16) & 1)) >> 16);
}
// qref::rne: round to nearest, ties to even.
LS_HD inline int rne(float x) {
#if defined(__CUDA_ARCH__)
    return __float2int_rn(x);
#else
    return static_cast<int>(std::nearbyint(x));
#endif
}
LS_HD inline float fabs_(float x) {
#if defined(__CUDA_ARCH__)
    return fabsf(x);
#else
    return std::fabs(x);
#endif
}
// std::max(a, b) for floats: (a < b) ? b : a.
LS_HD inline float max_(float a, float b) { return a < b ? b : a; }
LS_HD inline int clampi(int v, int lo, int hi) { return v < lo ? lo : (v > hi ? hi : v); }
LS_HD inline float ldf(const uint8_t* p) {
    float f;
    memcpy(&f, p, 4);
    return f;
}
LS_HD inline uint16_t ldh(const uint8_t* p) {  // p is 2-byte aligned in every use (fp16 fields, F16 rows)
#if defined(__CUDA_ARCH__)
    return *reinterpret_cast<const uint16_t*>(p);
#else
    return uint16_t(p[0] | (p[1] << 8));
#endif
}
// Element stores into F32/F16/BF16 rows (naturally aligned there). One typed store: on the
// H100 (CUDA 13.0, sm_90) a 2-byte memcpy of an f16 conversion result compiled to two byte
// stores that lost the low byte (set_rows f16 and the f16 activation rows came out with
// their low 8 mantissa bits zero), so no byte-wise copies of conversion results.
LS_HD inline void st16(uint8_t* p, uint16_t v) {
#if defined(__CUDA_ARCH__)
    *reinterpret_cast<uint16_t*>(p) = v;
#else
    memcpy(p, &v, 2);
#endif
}
LS_HD inline void st32(uint8_t* p, int32_t v) {
#if defined(__CUDA_ARCH__)
    *reinterpret_cast<int32_t*>(p) = v;
#else
    memcpy(p, &v, 4);
#endif
}
LS_HD inline uint32_t ld32(const uint8_t* p) { return uint32_t(p[0]) | (uint32_t(p[1]) << 8) | (uint32_t(p[2]) << 16) | (uint32_t(p[3]) << 24); }

// ---------------------------------------------------------------- element access

LS_HD inline int nib(const uint8_t* qs, int j) { return j < 16 ? (qs[j] & 0x0F) : (qs[j - 16] >> 4); }
LS_HD inline int q3k_value(const BlockQ3_K& b, int e) {
    const int n = e / 128, j = (e % 128) / 32, l = e % 32;
    const int lo = (b.qs[32 * n + l] >> (2 * j)) & 3;
    const int hi = (b.hmask[l] >> (4 * n + j)) & 1;
    return lo - (hi ? 0 : 4);
}
LS_HD inline int q4k_value(const uint8_t* qs, int e) {
    const int c = e / 64, h = (e % 64) / 32, l = e % 32;
    return (qs[32 * c + l] >> (4 * h)) & 0x0F;
}
LS_HD inline int q5k_value(const BlockQ5_K& b, int e) { return q4k_value(b.qs, e) | (((b.qh[e % 32] >> (e / 32)) & 1) << 4); }
LS_HD inline int q6k_value(const BlockQ6_K& b, int e) {
    const int n = e / 128, k = (e % 128) / 32, l = e % 32;
    const int lo = (b.ql[64 * n + 32 * (k % 2) + l] >> (4 * (k / 2))) & 0x0F;
    const int hi = (b.qh[32 * n + l] >> (2 * k)) & 3;
    return (lo | (hi << 4)) - 32;
}
LS_HD inline int q2k_value(const BlockQ2_K& b, int e) {
    const int n = e / 128, j = (e % 128) / 32, l = e % 32;
    return (b.qs[32 * n + l] >> (2 * j)) & 3;
}

// Whether deq_elem knows the type (the dequantizable types of core/quant.cpp).
LS_HD inline bool deq_supported(DType t) {
    switch (t) {
        case DType::F32: case DType::F16: case DType::BF16: case DType::Q4_0: case DType::Q4_1:
        case DType::Q5_0: case DType::Q5_1: case DType::Q8_0: case DType::Q8_1: case DType::Q2_K:
        case DType::Q3_K: case DType::Q4_K: case DType::Q5_K: case DType::Q6_K: case DType::Q8_K:
            return true;
        default:
            return false;
    }
}

// Element e of a row of type t, as dequantize_row computes it (same float operations).
LS_HD inline float deq_elem(DType t, const uint8_t* row, int64_t e) {
    switch (t) {
        case DType::F32: return ldf(row + 4 * e);
        case DType::F16: return h2f(ldh(row + 2 * e));
        case DType::BF16: return bf2f(ldh(row + 2 * e));
        case DType::Q4_0: {
            const auto& b = reinterpret_cast<const BlockQ4_0*>(row)[e / QK];
            return h2f(b.d) * static_cast<float>(nib(b.qs, int(e % QK)) - 8);
        }
        case DType::Q4_1: {
            const auto& b = reinterpret_cast<const BlockQ4_1*>(row)[e / QK];
            return h2f(b.d) * static_cast<float>(nib(b.qs, int(e % QK))) + h2f(b.m);
        }
        case DType::Q5_0: {
            const auto& b = reinterpret_cast<const BlockQ5_0*>(row)[e / QK];
            const int j = int(e % QK);
            const int q = nib(b.qs, j) | (int((ld32(b.qh) >> j) & 1) << 4);
            return h2f(b.d) * static_cast<float>(q - 16);
        }
        case DType::Q5_1: {
            const auto& b = reinterpret_cast<const BlockQ5_1*>(row)[e / QK];
            const int j = int(e % QK);
            const int q = nib(b.qs, j) | (int((ld32(b.qh) >> j) & 1) << 4);
            return h2f(b.d) * static_cast<float>(q) + h2f(b.m);
        }
        case DType::Q8_0: {
            const auto& b = reinterpret_cast<const BlockQ8_0*>(row)[e / QK];
            return h2f(b.d) * static_cast<float>(b.qs[e % QK]);
        }
        case DType::Q8_1: {
            const auto& b = reinterpret_cast<const BlockQ8_1*>(row)[e / QK];
            return h2f(b.d) * static_cast<float>(b.qs[e % QK]);
        }
        case DType::Q2_K: {
            const auto& b = reinterpret_cast<const BlockQ2_K*>(row)[e / QK_K];
            const int i = int(e % QK_K);
            const uint8_t sc = b.scales[i / 16];
            const float dl = h2f(b.d) * static_cast<float>(sc & 0x0F), ml = h2f(b.dmin) * static_cast<float>(sc >> 4);
            return dl * static_cast<float>(q2k_value(b, i)) - ml;
        }
        case DType::Q3_K: {
            const auto& b = reinterpret_cast<const BlockQ3_K*>(row)[e / QK_K];
            const int i = int(e % QK_K);
            const float dl = h2f(b.d) * static_cast<float>(q3k_scale(b.scales, i / 16));
            return dl * static_cast<float>(q3k_value(b, i));
        }
        case DType::Q4_K: {
            const auto& b = reinterpret_cast<const BlockQ4_K*>(row)[e / QK_K];
            const int i = int(e % QK_K);
            uint8_t sc, m;
            k4_scale_min(b.scales, i / 32, sc, m);
            const float dl = h2f(b.d) * static_cast<float>(sc), ml = h2f(b.dmin) * static_cast<float>(m);
            return dl * static_cast<float>(q4k_value(b.qs, i)) - ml;
        }
        case DType::Q5_K: {
            const auto& b = reinterpret_cast<const BlockQ5_K*>(row)[e / QK_K];
            const int i = int(e % QK_K);
            uint8_t sc, m;
            k4_scale_min(b.scales, i / 32, sc, m);
            const float dl = h2f(b.d) * static_cast<float>(sc), ml = h2f(b.dmin) * static_cast<float>(m);
            return dl * static_cast<float>(q5k_value(b, i)) - ml;
        }
        case DType::Q6_K: {
            const auto& b = reinterpret_cast<const BlockQ6_K*>(row)[e / QK_K];
            const int i = int(e % QK_K);
            const float dl = h2f(b.d) * static_cast<float>(b.scales[i / 16]);
            return dl * static_cast<float>(q6k_value(b, i));
        }
        case DType::Q8_K: {
            const auto& b = reinterpret_cast<const BlockQ8_K*>(row)[e / QK_K];
            return b.d * static_cast<float>(b.qs[e % QK_K]);
        }
        default: return NAN;  // never launched: supports() rejects the type
    }
}

// ---------------------------------------------------------------- quantizers (one block)
// The reference quantizers of core/quant_legacy.cpp / quant_k.cpp, serial within a block
// (the absmax scans keep the reference's first-wins order for ties).

LS_HD inline void quant_block_q8_0(const float* x, BlockQ8_0& b) {
    float amax = 0;
    for (int j = 0; j < QK; ++j) amax = max_(amax, fabs_(x[j]));
    const float d = amax / 127.0f;
    const float id = amax != 0.0f ? 127.0f / amax : 0.0f;
    for (int j = 0; j < QK; ++j) b.qs[j] = static_cast<int8_t>(rne(x[j] * id));
    b.d = f2h(d);
}
LS_HD inline void quant_block_q8_1(const float* x, BlockQ8_1& b) {
    float amax = 0;
    for (int j = 0; j < QK; ++j) amax = max_(amax, fabs_(x[j]));
    const float d = amax / 127.0f;
    const float id = amax != 0.0f ? 127.0f / amax : 0.0f;
    int sum = 0;
    for (int j = 0; j < QK; ++j) {
        b.qs[j] = static_cast<int8_t>(rne(x[j] * id));
        sum += b.qs[j];
    }
    b.d = f2h(d);
    b.s = f2h(d * static_cast<float>(sum));
}
LS_HD inline void quant_block_q8_k(const float* x, BlockQ8_K& b) {
    float amax = 0;
    for (int e = 0; e < QK_K; ++e) amax = max_(amax, fabs_(x[e]));
    if (amax == 0) {
        b.d = 0;
        for (int e = 0; e < QK_K; ++e) b.qs[e] = 0;
        for (int g = 0; g < QK_K / 16; ++g) b.bsums[g] = 0;
        return;
    }
    const float iscale = 127.0f / amax;
    b.d = 1.0f / iscale;
    for (int e = 0; e < QK_K; ++e) b.qs[e] = static_cast<int8_t>(rne(x[e] * iscale));
    for (int g = 0; g < 16; ++g) {
        int s = 0;
        for (int l = 0; l < 16; ++l) s += b.qs[16 * g + l];
        b.bsums[g] = static_cast<int16_t>(s);
    }
}
// quant_sym_block<8>: the largest-magnitude element (first one on ties) maps to -8.
LS_HD inline void quant_block_q4_0(const float* x, BlockQ4_0& b) {
    float amax = 0, mx = 0;
    for (int j = 0; j < QK; ++j)
        if (fabs_(x[j]) > amax) {
            amax = fabs_(x[j]);
            mx = x[j];
        }
    const float d = mx / -8.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    b.d = f2h(d);
    int q[QK];
    for (int j = 0; j < QK; ++j) q[j] = clampi(rne(x[j] * id) + 8, 0, 15);
    for (int j = 0; j < 16; ++j) b.qs[j] = static_cast<uint8_t>((q[j] & 0x0F) | ((q[j + 16] & 0x0F) << 4));
}

// Quantizes block `blk` of a row of F32 values into type t (the types set_rows writes and
// the activation types mul_mat dots with). For F32/F16/BF16 a "block" is one element.
LS_HD inline void quant_block(DType t, const float* x, uint8_t* row, int64_t blk) {
    switch (t) {
        case DType::F32: return st32(row + 4 * blk, detp::float_bits(x[0]));
        case DType::F16: return st16(row + 2 * blk, f2h(x[0]));
        case DType::BF16: return st16(row + 2 * blk, f2bf(x[0]));
        case DType::Q8_0: return quant_block_q8_0(x, reinterpret_cast<BlockQ8_0*>(row)[blk]);
        case DType::Q8_1: return quant_block_q8_1(x, reinterpret_cast<BlockQ8_1*>(row)[blk]);
        case DType::Q8_K: return quant_block_q8_k(x, reinterpret_cast<BlockQ8_K*>(row)[blk]);
        case DType::Q4_0: return quant_block_q4_0(x, reinterpret_cast<BlockQ4_0*>(row)[blk]);
        default: return;  // never launched: supports() rejects the type
    }
}
LS_HD inline bool quant_supported(DType t) {
    switch (t) {
        case DType::F32: case DType::F16: case DType::BF16: case DType::Q8_0: case DType::Q8_1:
        case DType::Q8_K: case DType::Q4_0:
            return true;
        default:
            return false;
    }
}
// Elements per quant_block call.
LS_HD inline int quant_block_elems(DType t) {
    switch (t) {
        case DType::Q8_0: case DType::Q8_1: case DType::Q4_0: return QK;
        case DType::Q8_K: return QK_K;
        default: return 1;
    }
}

// ---------------------------------------------------------------- mul_mat blocks
// Dot of one weight block with one activation block: an exact integer part (any thread,
// any order), then the block's step of the float chain(s), which must run in block order.
// The float weight types have no chain: they sum exact products in double (dot_f below).

struct Isum {
    int i = 0;  // scale-weighted integer sum
    int m = 0;  // min term (K-quants with mins)
};

template <DType W> struct WDot;

template <> struct WDot<DType::Q4_0> {
    using WB = BlockQ4_0;
    using AB = BlockQ8_0;
    LS_HD static Isum isum(const WB& x, const AB& y) {
        Isum r;
        for (int j = 0; j < QK; ++j) r.i += (nib(x.qs, j) - 8) * y.qs[j];
        return r;
    }
    LS_HD static void step(const WB& x, const AB& y, Isum s, float& sum, float&) {
        sum = detp::fma(h2f(x.d) * h2f(y.d), static_cast<float>(s.i), sum);
    }
    static constexpr bool has_min = false;
};
template <> struct WDot<DType::Q4_1> {
    using WB = BlockQ4_1;
    using AB = BlockQ8_1;
    LS_HD static Isum isum(const WB& x, const AB& y) {
        Isum r;
        for (int j = 0; j < QK; ++j) r.i += nib(x.qs, j) * y.qs[j];
        return r;
    }
    LS_HD static void step(const WB& x, const AB& y, Isum s, float& sum, float&) {
        sum = detp::fma(h2f(x.d) * h2f(y.d), static_cast<float>(s.i), sum);
        sum = detp::fma(h2f(x.m), h2f(y.s), sum);
    }
    static constexpr bool has_min = false;
};
template <> struct WDot<DType::Q5_0> {
    using WB = BlockQ5_0;
    using AB = BlockQ8_0;
    LS_HD static Isum isum(const WB& x, const AB& y) {
        const uint32_t qh = ld32(x.qh);
        Isum r;
        for (int j = 0; j < QK; ++j) r.i += ((nib(x.qs, j) | (int((qh >> j) & 1) << 4)) - 16) * y.qs[j];
        return r;
    }
    LS_HD static void step(const WB& x, const AB& y, Isum s, float& sum, float&) {
        sum = detp::fma(h2f(x.d) * h2f(y.d), static_cast<float>(s.i), sum);
    }
    static constexpr bool has_min = false;
};
template <> struct WDot<DType::Q5_1> {
    using WB = BlockQ5_1;
    using AB = BlockQ8_1;
    LS_HD static Isum isum(const WB& x, const AB& y) {
        const uint32_t qh = ld32(x.qh);
        Isum r;
        for (int j = 0; j < QK; ++j) r.i += (nib(x.qs, j) | (int((qh >> j) & 1) << 4)) * y.qs[j];
        return r;
    }
    LS_HD static void step(const WB& x, const AB& y, Isum s, float& sum, float&) {
        sum = detp::fma(h2f(x.d) * h2f(y.d), static_cast<float>(s.i), sum);
        sum = detp::fma(h2f(x.m), h2f(y.s), sum);
    }
    static constexpr bool has_min = false;
};
template <> struct WDot<DType::Q8_0> {
    using WB = BlockQ8_0;
    using AB = BlockQ8_0;
    LS_HD static Isum isum(const WB& x, const AB& y) {
        Isum r;
        for (int j = 0; j < QK; ++j) r.i += x.qs[j] * y.qs[j];
        return r;
    }
    LS_HD static void step(const WB& x, const AB& y, Isum s, float& sum, float&) {
        sum = detp::fma(h2f(x.d) * h2f(y.d), static_cast<float>(s.i), sum);
    }
    static constexpr bool has_min = false;
};
template <> struct WDot<DType::Q2_K> {
    using WB = BlockQ2_K;
    using AB = BlockQ8_K;
    LS_HD static Isum isum(const WB& x, const AB& y) {
        Isum r;
        for (int s = 0; s < 16; ++s) {
            int si = 0;
            for (int t = 0; t < 16; ++t) si += q2k_value(x, 16 * s + t) * y.qs[16 * s + t];
            r.i += (x.scales[s] & 0x0F) * si;
            r.m += (x.scales[s] >> 4) * y.bsums[s];
        }
        return r;
    }
    LS_HD static void step(const WB& x, const AB& y, Isum s, float& sum, float& msum) {
        sum = detp::fma(y.d * h2f(x.d), static_cast<float>(s.i), sum);
        msum = detp::fma(y.d * h2f(x.dmin), static_cast<float>(s.m), msum);
    }
    static constexpr bool has_min = true;
};
template <> struct WDot<DType::Q3_K> {
    using WB = BlockQ3_K;
    using AB = BlockQ8_K;
    LS_HD static Isum isum(const WB& x, const AB& y) {
        Isum r;
        for (int s = 0; s < 16; ++s) {
            int si = 0;
            for (int t = 0; t < 16; ++t) si += q3k_value(x, 16 * s + t) * y.qs[16 * s + t];
            r.i += q3k_scale(x.scales, s) * si;
        }
        return r;
    }
    LS_HD static void step(const WB& x, const AB& y, Isum s, float& sum, float&) {
        sum = detp::fma(y.d * h2f(x.d), static_cast<float>(s.i), sum);
    }
    static constexpr bool has_min = false;
};
template <> struct WDot<DType::Q4_K> {
    using WB = BlockQ4_K;
    using AB = BlockQ8_K;
    LS_HD static Isum isum(const WB& x, const AB& y) {
        Isum r;
        for (int s = 0; s < 8; ++s) {
            uint8_t sc, m;
            k4_scale_min(x.scales, s, sc, m);
            int si = 0;
            for (int t = 0; t < 32; ++t) si += q4k_value(x.qs, 32 * s + t) * y.qs[32 * s + t];
            r.i += sc * si;
            r.m += m * (y.bsums[2 * s] + y.bsums[2 * s + 1]);
        }
        return r;
    }
    LS_HD static void step(const WB& x, const AB& y, Isum s, float& sum, float& msum) {
        sum = detp::fma(y.d * h2f(x.d), static_cast<float>(s.i), sum);
        msum = detp::fma(y.d * h2f(x.dmin), static_cast<float>(s.m), msum);
    }
    static constexpr bool has_min = true;
};
template <> struct WDot<DType::Q5_K> {
    using WB = BlockQ5_K;
    using AB = BlockQ8_K;
    LS_HD static Isum isum(const WB& x, const AB& y) {
        Isum r;
        for (int s = 0; s < 8; ++s) {
            uint8_t sc, m;
            k4_scale_min(x.scales, s, sc, m);
            int si = 0;
            for (int t = 0; t < 32; ++t) si += q5k_value(x, 32 * s + t) * y.qs[32 * s + t];
            r.i += sc * si;
            r.m += m * (y.bsums[2 * s] + y.bsums[2 * s + 1]);
        }
        return r;
    }
    LS_HD static void step(const WB& x, const AB& y, Isum s, float& sum, float& msum) {
        sum = detp::fma(y.d * h2f(x.d), static_cast<float>(s.i), sum);
        msum = detp::fma(y.d * h2f(x.dmin), static_cast<float>(s.m), msum);
    }
    static constexpr bool has_min = true;
};
template <> struct WDot<DType::Q6_K> {
    using WB = BlockQ6_K;
    using AB = BlockQ8_K;
    LS_HD static Isum isum(const WB& x, const AB& y) {
        Isum r;
        for (int s = 0; s < 16; ++s) {
            int si = 0;
            for (int t = 0; t < 16; ++t) si += q6k_value(x, 16 * s + t) * y.qs[16 * s + t];
            r.i += x.scales[s] * si;
        }
        return r;
    }
    LS_HD static void step(const WB& x, const AB& y, Isum s, float& sum, float&) {
        sum = detp::fma(y.d * h2f(x.d), static_cast<float>(s.i), sum);
    }
    static constexpr bool has_min = false;
};

template <DType W> LS_HD inline float finish(float sum, float msum) {
    if constexpr (WDot<W>::has_min) return sum - msum;
    else return sum;
}

// The whole row, serially: the sequence the kernel reproduces (its threads compute the
// integer parts of different blocks, then the chain runs over the blocks in order).
template <DType W> LS_HD inline float row_dot(const uint8_t* wrow, const uint8_t* arow, int64_t nb) {
    using D = WDot<W>;
    const auto* x = reinterpret_cast<const typename D::WB*>(wrow);
    const auto* y = reinterpret_cast<const typename D::AB*>(arow);
    float sum = 0, msum = 0;
    for (int64_t b = 0; b < nb; ++b) D::step(x[b], y[b], D::isum(x[b], y[b]), sum, msum);
    return finish<W>(sum, msum);
}

// Exact product of element e of a float-type weight row and of its activation row
// (F16 weights dot F16 activations, F32 and BF16 weights dot F32 activations).
LS_HD inline double prod_f(DType w, const uint8_t* wrow, const uint8_t* arow, int64_t e) {
    switch (w) {
        case DType::F32: return double(ldf(wrow + 4 * e)) * double(ldf(arow + 4 * e));
        case DType::F16: return double(h2f(ldh(wrow + 2 * e))) * double(h2f(ldh(arow + 2 * e)));
        case DType::BF16: return double(bf2f(ldh(wrow + 2 * e))) * double(ldf(arow + 4 * e));
        default: return NAN;
    }
}

// Weight types mul_mat runs (those vec_dot_ref supports).
LS_HD inline bool mul_mat_supported(DType w) {
    switch (w) {
        case DType::F32: case DType::F16: case DType::BF16: case DType::Q4_0: case DType::Q4_1:
        case DType::Q5_0: case DType::Q5_1: case DType::Q8_0: case DType::Q2_K: case DType::Q3_K:
        case DType::Q4_K: case DType::Q5_K: case DType::Q6_K:
            return true;
        default:
            return false;
    }
}

}  // namespace ls::cudaq
