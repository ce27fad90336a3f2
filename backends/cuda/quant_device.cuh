// Quantized blocks on the device: element dequantization, the activation quantizers, and
// per-block integer sums with the float chain step of mul_mat, written once for host and
// device (LS_HD). Each function follows its reference in core/quant/quant_*.cpp
// operation for operation. Compiled by the host compiler too, so that
// tests/backends/test_cuda_host.cpp checks it bit for bit against the reference without a GPU; the
// kernels only decide which thread runs which block, never the order of a float chain.
#pragma once
#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "core/quant/block_access.h"
#include "core/quant/dtype.h"
#include "core/quant/iq_access.h"
#include "core/quant/iq_grid_words.h"
#include "core/quant/quant.h"
#include "core/quant/quant_blocks.h"
#include "core/rules/canon.h"
#include "core/rules/hd.h"

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
// fp32_to_bf16 of core/quant/quant.cpp, bit for bit.
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

// The element and scale accessors are core/quant/block_access.h, shared with the reference.

// Whether deq_elem knows the type (the dequantizable types of core/quant/quant.cpp).
LS_HD inline bool deq_supported(DType t) {
    switch (t) {
        case DType::F32: case DType::F16: case DType::BF16: case DType::Q4_0: case DType::Q4_1:
        case DType::Q5_0: case DType::Q5_1: case DType::Q8_0: case DType::Q8_1: case DType::Q2_K:
        case DType::Q3_K: case DType::Q4_K: case DType::Q5_K: case DType::Q6_K: case DType::Q8_K:
        case DType::IQ4_NL: case DType::IQ4_XS: case DType::MXFP4: case DType::TQ1_0: case DType::TQ2_0:
        case DType::IQ2_XXS: case DType::IQ2_XS: case DType::IQ2_S: case DType::IQ3_XXS: case DType::IQ3_S:
        case DType::IQ1_S: case DType::IQ1_M:
            return true;
        default:
            return false;
    }
}

// Element e of a row of grid i-quants of type W (defined below, after their WDot).
template <DType W> LS_HD inline float iq_deq(const uint8_t* row, int64_t e);

// MXFP4's block scale 2^(e - 128) (block_access.h).
LS_HD inline float mxfp4_scale(uint8_t e) { return detp::bits_float(int32_t(mxfp4_scale_bits(e))); }

// Element e of a row of type t, as dequantize_row computes it (same float operations).
LS_HD inline float deq_elem(DType t, const uint8_t* row, int64_t e) {
    switch (t) {
        case DType::F32: return ldf(row + 4 * e);
        case DType::F16: return h2f(ldh(row + 2 * e));
        case DType::BF16: return bf2f(ldh(row + 2 * e));
        case DType::Q4_0: {
            const auto& b = reinterpret_cast<const BlockQ4_0*>(row)[e / QK];
            return h2f(b.d) * static_cast<float>(nibble(b.qs, int(e % QK)) - 8);
        }
        case DType::Q4_1: {
            const auto& b = reinterpret_cast<const BlockQ4_1*>(row)[e / QK];
            return h2f(b.d) * static_cast<float>(nibble(b.qs, int(e % QK))) + h2f(b.m);
        }
        case DType::Q5_0: {
            const auto& b = reinterpret_cast<const BlockQ5_0*>(row)[e / QK];
            const int j = int(e % QK);
            const int q = nibble(b.qs, j) | (fifth_bit(load_qh(b.qh), j) << 4);
            return h2f(b.d) * static_cast<float>(q - 16);
        }
        case DType::Q5_1: {
            const auto& b = reinterpret_cast<const BlockQ5_1*>(row)[e / QK];
            const int j = int(e % QK);
            const int q = nibble(b.qs, j) | (fifth_bit(load_qh(b.qh), j) << 4);
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
            const float dl = h2f(b.d) * static_cast<float>(q2k_scale(b.scales, i / 16)),
                        ml = h2f(b.dmin) * static_cast<float>(q2k_min(b.scales, i / 16));
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
        case DType::IQ4_NL: {
            const auto& b = reinterpret_cast<const BlockIQ4_NL*>(row)[e / QK];
            return h2f(b.d) * static_cast<float>(iq4nl_level(nibble(b.qs, int(e % QK))));
        }
        case DType::IQ4_XS: {
            const auto& b = reinterpret_cast<const BlockIQ4_XS*>(row)[e / QK_K];
            const int i = int(e % QK_K);
            const float dl = h2f(b.d) * static_cast<float>(iq4xs_scale(b, i / 32));
            return dl * static_cast<float>(iq4xs_value(b, i));
        }
        case DType::MXFP4: {  // 17-byte blocks: any address, read a byte at a time
            const auto& b = reinterpret_cast<const BlockMXFP4*>(row)[e / QK];
            return mxfp4_scale(b.e) * static_cast<float>(mxfp4_level(nibble(b.qs, int(e % QK))));
        }
        case DType::TQ1_0: {
            const auto& b = reinterpret_cast<const BlockTQ1_0*>(row)[e / QK_K];
            return h2f(b.d) * static_cast<float>(tq1_value(b, int(e % QK_K)));
        }
        case DType::TQ2_0: {
            const auto& b = reinterpret_cast<const BlockTQ2_0*>(row)[e / QK_K];
            return h2f(b.d) * static_cast<float>(tq2_value(b, int(e % QK_K)));
        }
        case DType::IQ2_XXS: return iq_deq<DType::IQ2_XXS>(row, e);
        case DType::IQ2_XS: return iq_deq<DType::IQ2_XS>(row, e);
        case DType::IQ2_S: return iq_deq<DType::IQ2_S>(row, e);
        case DType::IQ3_XXS: return iq_deq<DType::IQ3_XXS>(row, e);
        case DType::IQ3_S: return iq_deq<DType::IQ3_S>(row, e);
        case DType::IQ1_S: return iq_deq<DType::IQ1_S>(row, e);
        case DType::IQ1_M: return iq_deq<DType::IQ1_M>(row, e);
        default: return NAN;  // never launched: supports() rejects the type
    }
}

// ---------------------------------------------------------------- quantizers (one block)
// The reference quantizers of core/quant/quant_legacy.cpp / quant_k.cpp, serial within a block
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
// The float weight types have no chain: their dot product is canon_dot (prod_f below).
//
// The integer part is defined once, by sub_isum() and isum() below, from what each type
// tells about its block: the weights of a sub-block of kSub elements as signed bytes four at
// a time (value4), the sub-block's integer scale (sub_scale) and, for the types with mins,
// the sub-block's min term (min_sub). The tensor-core kernel of mul_mat computes the same sub-block dot
// products with mma instructions and combines them the same way.

struct Isum {
    int i = 0;  // scale-weighted integer sum
    int m = 0;  // min term (K-quants with mins)
};

// Four bytes from p, the first in the low byte. p is always 2-byte aligned: every packed
// field of every block starts at an even offset, block sizes and row strides are even, and
// value4's e is a multiple of 4; so the device reads two 16-bit words, not four bytes. The
// host checks the alignment, so that the emulated kernels would catch a call that breaks it.
// (MXFP4's 17-byte blocks are the exception: its value4 reads bytes, ld32.)
LS_HD inline uint32_t ld4(const void* p) {
#if defined(__CUDA_ARCH__)
    const auto* h = static_cast<const uint16_t*>(p);
    return uint32_t(h[0]) | (uint32_t(h[1]) << 16);
#else
    if (reinterpret_cast<uintptr_t>(p) % 2 != 0) __builtin_trap();
    return ld32(static_cast<const uint8_t*>(p));
#endif
}
// Each byte of v (all <= 127) minus c (<= 128), as signed bytes, without borrows between
// bytes: the high bit set first keeps every byte's difference non-negative.
LS_HD inline uint32_t sub_bytes(uint32_t v, uint32_t c) { return ((v | 0x80808080u) - c * 0x01010101u) ^ 0x80808080u; }
// Bits 0..3 of h, one to each byte's low bit.
LS_HD inline uint32_t spread4(uint32_t h) { return (h & 1u) | ((h & 2u) << 7) | ((h & 4u) << 14) | ((h & 8u) << 21); }
// Sum of the products of the signed bytes of a and b.
LS_HD inline int dot4(uint32_t a, uint32_t b) {
#if defined(__CUDA_ARCH__)
    return __dp4a(int(a), int(b), 0);
#else
    int s = 0;
    for (int i = 0; i < 4; ++i) s += int(int8_t(uint8_t(a >> (8 * i)))) * int(int8_t(uint8_t(b >> (8 * i))));
    return s;
#endif
}

// Four 4-bit indices (one in the low nibble of each byte of q) looked up in a table of 16
// signed bytes (lo: entries 0..7, hi: 8..15, block_access.h's lut16), as four bytes. The
// device picks each byte with __byte_perm from both halves and keeps the one bit 3 chooses.
LS_HD inline uint32_t lut4(uint32_t q, uint64_t lo, uint64_t hi) {
#if defined(__CUDA_ARCH__)
    const uint32_t sel = (q & 0x7u) | ((q >> 4) & 0x70u) | ((q >> 8) & 0x700u) | ((q >> 12) & 0x7000u);
    const uint32_t vl = __byte_perm(uint32_t(lo), uint32_t(lo >> 32), sel);
    const uint32_t vh = __byte_perm(uint32_t(hi), uint32_t(hi >> 32), sel);
    const uint32_t m = ((q >> 3) & 0x01010101u) * 0xFFu;
    return (vl & ~m) | (vh & m);
#else
    uint32_t r = 0;
    for (int i = 0; i < 4; ++i) r |= uint32_t(uint8_t(lut16(lo, hi, int((q >> (8 * i)) & 0x0F)))) << (8 * i);
    return r;
#endif
}
// Digit n (0..4) of four TQ1_0 base-3 fractions, one per byte of q (block_access.h's
// tq1_value: ((q * 3^n mod 256) * 3) >> 8), minus 1, as four signed bytes. Two bytes at a
// time in 16-bit lanes: q * 3^n < 2^16 and its low byte times 3 < 2^10, so no lane spills.
LS_HD inline uint32_t tq1_digits2(uint32_t v, uint32_t p) { return ((((v & 0x00FF00FFu) * p) & 0x00FF00FFu) * 3u >> 8) & 0x00FF00FFu; }
LS_HD inline uint32_t tq1_digits4(uint32_t q, int n) {
    uint32_t p = 1;
    for (int k = 0; k < n; ++k) p *= 3;
    return sub_bytes(tq1_digits2(q, p) | (tq1_digits2(q >> 8, p) << 8), 1);
}

// The grid i-quants' codebooks: the 32-bit words of core/quant/iq_grid_words.h as they are
// (element j of an entry in byte j % 4 of word j / 4 of the entry's words). Function-local
// statics, so that host and device share the lookup, not only the words: nvcc puts each table
// in device global memory, read through the read-only cache (ld.global.nc) since the lanes of
// a warp look up different entries, and the host compiler in ordinary memory; the host tests
// and the emulator thus run the very indexing the GPU does.
LS_HD inline uint32_t iq2xxs_grid(int w) {  // 256 entries of 8 values: two words each
    static const uint32_t t[] = {LS_IQ2XXS_GRID_WORDS};
    static_assert(sizeof(t) == 256 * 8, "IQ2_XXS codebook");
    return t[w];
}
LS_HD inline uint32_t iq2xs_grid(int w) {  // 512 entries of 8
    static const uint32_t t[] = {LS_IQ2XS_GRID_WORDS};
    static_assert(sizeof(t) == 512 * 8, "IQ2_XS codebook");
    return t[w];
}
LS_HD inline uint32_t iq2s_grid(int w) {  // 1024 entries of 8
    static const uint32_t t[] = {LS_IQ2S_GRID_WORDS};
    static_assert(sizeof(t) == 1024 * 8, "IQ2_S codebook");
    return t[w];
}
LS_HD inline uint32_t iq3xxs_grid(int w) {  // 256 entries of 4: one word each
    static const uint32_t t[] = {LS_IQ3XXS_GRID_WORDS};
    static_assert(sizeof(t) == 256 * 4, "IQ3_XXS codebook");
    return t[w];
}
LS_HD inline uint32_t iq3s_grid(int w) {  // 512 entries of 4
    static const uint32_t t[] = {LS_IQ3S_GRID_WORDS};
    static_assert(sizeof(t) == 512 * 4, "IQ3_S codebook");
    return t[w];
}
LS_HD inline uint32_t iq1s_grid(int w) {  // 2048 entries of 8 (IQ1_S and IQ1_M)
    static const uint32_t t[] = {LS_IQ1S_GRID_WORDS};
    static_assert(sizeof(t) == 2048 * 8, "IQ1 codebook");
    return t[w];
}
// Sign byte i (0..127): bit j set negates element j of the group of 8.
LS_HD inline uint32_t iq_signs(int i) {
    static const uint32_t t[] = {LS_IQ_SIGNS_WORDS};
    static_assert(sizeof(t) == 128, "sign table");
    return (t[i / 4] >> (8 * (i % 4))) & 0xFFu;
}
// Four grid values (bytes, all >= 1: no grid of IQ2/IQ3 holds a 0) with byte i negated where
// bit i of sb is set: (v ^ 0xFF) + 1 = 256 - v, which never carries into the next byte as v >= 1.
LS_HD inline uint32_t sign4(uint32_t v, uint32_t sb) {
    const uint32_t one = spread4(sb);
    return (v ^ (one * 0xFFu)) + one;
}
// Four IQ1 grid bytes g (-1, 0, 1) as 8g + delta (delta +-1, iq_access.h's integer value):
// g + 1 (0..2) through each byte's high bit so that nothing carries, times 8, minus 8 - delta.
LS_HD inline uint32_t iq1_value4(uint32_t g, bool neg_delta) {
    const uint32_t u = ((g ^ 0x80808080u) + 0x01010101u) ^ 0x80808080u;
    return sub_bytes(u << 3, neg_delta ? 9u : 7u);
}
// IQ2_XS, IQ2_S and IQ3_S: the scale of sub-block s, ls = 2 * (nibble s of scales) + 1.
LS_HD inline int iq_nibble_scale(const uint8_t* scales, int s) { return 2 * ((scales[s / 2] >> (4 * (s % 2))) & 0x0F) + 1; }

// Q4_K/Q5_K: the scale of sub-block s, and the min term of sub-block s (of 8, of 32 each).
LS_HD inline int k4_scale(const uint8_t* scales, int s) {
    uint8_t sc, m;
    k4_scale_min(scales, s, sc, m);
    return sc;
}
LS_HD inline int k4_min_sub(const uint8_t* scales, const int16_t* bsums, int s) {
    uint8_t sc, m;
    k4_scale_min(scales, s, sc, m);
    return m * (bsums[2 * s] + bsums[2 * s + 1]);
}

template <DType W> struct WDot;

// value4(x, e): elements e..e+3 (e a multiple of 4) of the block as the integers its dot
// product multiplies, one signed byte each.
template <> struct WDot<DType::Q4_0> {
    using WB = BlockQ4_0;
    using AB = BlockQ8_0;
    static constexpr int kSub = QK;
    LS_HD static uint32_t value4(const WB& x, int e) { return sub_bytes((ld4(x.qs + e % 16) >> (4 * (e / 16))) & 0x0F0F0F0Fu, 8); }
    LS_HD static int sub_scale(const WB&, int) { return 1; }
    LS_HD static void step(const WB& x, const AB& y, Isum s, float& sum, float&) {
        sum = sum + (h2f(x.d) * h2f(y.d)) * static_cast<float>(s.i);
    }
    static constexpr bool has_min = false;
};
template <> struct WDot<DType::Q4_1> {
    using WB = BlockQ4_1;
    using AB = BlockQ8_1;
    static constexpr int kSub = QK;
    LS_HD static uint32_t value4(const WB& x, int e) { return (ld4(x.qs + e % 16) >> (4 * (e / 16))) & 0x0F0F0F0Fu; }
    LS_HD static int sub_scale(const WB&, int) { return 1; }
    LS_HD static void step(const WB& x, const AB& y, Isum s, float& sum, float&) {
        sum = sum + (h2f(x.d) * h2f(y.d)) * static_cast<float>(s.i);
        sum = sum + h2f(x.m) * h2f(y.s);
    }
    static constexpr bool has_min = false;
};
template <> struct WDot<DType::Q5_0> {
    using WB = BlockQ5_0;
    using AB = BlockQ8_0;
    static constexpr int kSub = QK;
    LS_HD static uint32_t value4(const WB& x, int e) {
        const uint32_t lo = (ld4(x.qs + e % 16) >> (4 * (e / 16))) & 0x0F0F0F0Fu;
        return sub_bytes(lo | (spread4((ld4(x.qh) >> e) & 0xFu) << 4), 16);
    }
    LS_HD static int sub_scale(const WB&, int) { return 1; }
    LS_HD static void step(const WB& x, const AB& y, Isum s, float& sum, float&) {
        sum = sum + (h2f(x.d) * h2f(y.d)) * static_cast<float>(s.i);
    }
    static constexpr bool has_min = false;
};
template <> struct WDot<DType::Q5_1> {
    using WB = BlockQ5_1;
    using AB = BlockQ8_1;
    static constexpr int kSub = QK;
    LS_HD static uint32_t value4(const WB& x, int e) {
        const uint32_t lo = (ld4(x.qs + e % 16) >> (4 * (e / 16))) & 0x0F0F0F0Fu;
        return lo | (spread4((ld4(x.qh) >> e) & 0xFu) << 4);
    }
    LS_HD static int sub_scale(const WB&, int) { return 1; }
    LS_HD static void step(const WB& x, const AB& y, Isum s, float& sum, float&) {
        sum = sum + (h2f(x.d) * h2f(y.d)) * static_cast<float>(s.i);
        sum = sum + h2f(x.m) * h2f(y.s);
    }
    static constexpr bool has_min = false;
};
template <> struct WDot<DType::Q8_0> {
    using WB = BlockQ8_0;
    using AB = BlockQ8_0;
    static constexpr int kSub = QK;
    LS_HD static uint32_t value4(const WB& x, int e) { return ld4(x.qs + e); }
    LS_HD static int sub_scale(const WB&, int) { return 1; }
    LS_HD static void step(const WB& x, const AB& y, Isum s, float& sum, float&) {
        sum = sum + (h2f(x.d) * h2f(y.d)) * static_cast<float>(s.i);
    }
    static constexpr bool has_min = false;
};
template <> struct WDot<DType::Q2_K> {
    using WB = BlockQ2_K;
    using AB = BlockQ8_K;
    static constexpr int kSub = 16;
    LS_HD static uint32_t value4(const WB& x, int e) {
        return (ld4(x.qs + 32 * (e / 128) + e % 32) >> (2 * ((e % 128) / 32))) & 0x03030303u;
    }
    LS_HD static int sub_scale(const WB& x, int s) { return q2k_scale(x.scales, s); }
    LS_HD static int min_sub(const WB& x, const AB& y, int s) { return q2k_min(x.scales, s) * y.bsums[s]; }
    LS_HD static void step(const WB& x, const AB& y, Isum s, float& sum, float& msum) {
        sum = sum + (y.d * h2f(x.d)) * static_cast<float>(s.i);
        msum = msum + (y.d * h2f(x.dmin)) * static_cast<float>(s.m);
    }
    static constexpr bool has_min = true;
};
template <> struct WDot<DType::Q3_K> {
    using WB = BlockQ3_K;
    using AB = BlockQ8_K;
    static constexpr int kSub = 16;
    // Two low bits, and 4 subtracted where the hmask bit is clear: lo + 4 * hi - 4.
    LS_HD static uint32_t value4(const WB& x, int e) {
        const int n = e / 128, j = (e % 128) / 32, l = e % 32;
        const uint32_t lo = (ld4(x.qs + 32 * n + l) >> (2 * j)) & 0x03030303u;
        const uint32_t hi = (ld4(x.hmask + l) >> (4 * n + j)) & 0x01010101u;
        return sub_bytes(lo | (hi << 2), 4);
    }
    LS_HD static int sub_scale(const WB& x, int s) { return q3k_scale(x.scales, s); }
    LS_HD static void step(const WB& x, const AB& y, Isum s, float& sum, float&) {
        sum = sum + (y.d * h2f(x.d)) * static_cast<float>(s.i);
    }
    static constexpr bool has_min = false;
};
template <> struct WDot<DType::Q4_K> {
    using WB = BlockQ4_K;
    using AB = BlockQ8_K;
    static constexpr int kSub = 32;
    LS_HD static uint32_t value4(const WB& x, int e) {
        return (ld4(x.qs + 32 * (e / 64) + e % 32) >> (4 * ((e % 64) / 32))) & 0x0F0F0F0Fu;
    }
    LS_HD static int sub_scale(const WB& x, int s) { return k4_scale(x.scales, s); }
    LS_HD static int min_sub(const WB& x, const AB& y, int s) { return k4_min_sub(x.scales, y.bsums, s); }
    LS_HD static void step(const WB& x, const AB& y, Isum s, float& sum, float& msum) {
        sum = sum + (y.d * h2f(x.d)) * static_cast<float>(s.i);
        msum = msum + (y.d * h2f(x.dmin)) * static_cast<float>(s.m);
    }
    static constexpr bool has_min = true;
};
template <> struct WDot<DType::Q5_K> {
    using WB = BlockQ5_K;
    using AB = BlockQ8_K;
    static constexpr int kSub = 32;
    LS_HD static uint32_t value4(const WB& x, int e) {
        const uint32_t lo = (ld4(x.qs + 32 * (e / 64) + e % 32) >> (4 * ((e % 64) / 32))) & 0x0F0F0F0Fu;
        const uint32_t hi = (ld4(x.qh + e % 32) >> (e / 32)) & 0x01010101u;
        return lo | (hi << 4);
    }
    LS_HD static int sub_scale(const WB& x, int s) { return k4_scale(x.scales, s); }
    LS_HD static int min_sub(const WB& x, const AB& y, int s) { return k4_min_sub(x.scales, y.bsums, s); }
    LS_HD static void step(const WB& x, const AB& y, Isum s, float& sum, float& msum) {
        sum = sum + (y.d * h2f(x.d)) * static_cast<float>(s.i);
        msum = msum + (y.d * h2f(x.dmin)) * static_cast<float>(s.m);
    }
    static constexpr bool has_min = true;
};
template <> struct WDot<DType::Q6_K> {
    using WB = BlockQ6_K;
    using AB = BlockQ8_K;
    static constexpr int kSub = 16;
    // Four low bits from ql, two high bits from qh, minus 32.
    LS_HD static uint32_t value4(const WB& x, int e) {
        const int n = e / 128, k = (e % 128) / 32, l = e % 32;
        const uint32_t lo = (ld4(x.ql + 64 * n + 32 * (k % 2) + l) >> (4 * (k / 2))) & 0x0F0F0F0Fu;
        const uint32_t hi = (ld4(x.qh + 32 * n + l) >> (2 * k)) & 0x03030303u;
        return sub_bytes(lo | (hi << 4), 32);
    }
    LS_HD static int sub_scale(const WB& x, int s) { return x.scales[s]; }
    LS_HD static void step(const WB& x, const AB& y, Isum s, float& sum, float&) {
        sum = sum + (y.d * h2f(x.d)) * static_cast<float>(s.i);
    }
    static constexpr bool has_min = false;
};

// The lookup-table types: 4-bit indices into int8 levels, the block's integer sum over all 32
// (IQ4_NL, MXFP4) or per sub-block of 32 times its 6-bit scale (IQ4_XS).
template <> struct WDot<DType::IQ4_NL> {
    using WB = BlockIQ4_NL;
    using AB = BlockQ8_0;
    static constexpr int kSub = QK;
    LS_HD static uint32_t value4(const WB& x, int e) {
        return lut4((ld4(x.qs + e % 16) >> (4 * (e / 16))) & 0x0F0F0F0Fu, kIQ4NLLo, kIQ4NLHi);
    }
    LS_HD static int sub_scale(const WB&, int) { return 1; }
    LS_HD static void step(const WB& x, const AB& y, Isum s, float& sum, float&) {
        sum = sum + (h2f(x.d) * h2f(y.d)) * static_cast<float>(s.i);
    }
    static constexpr bool has_min = false;
};
template <> struct WDot<DType::MXFP4> {
    using WB = BlockMXFP4;
    using AB = BlockQ8_0;
    static constexpr int kSub = QK;
    // The 17-byte blocks lie at odd addresses in every other block: bytes, not ld4.
    LS_HD static uint32_t value4(const WB& x, int e) {
        return lut4((ld32(x.qs + e % 16) >> (4 * (e / 16))) & 0x0F0F0F0Fu, kMXFP4Lo, kMXFP4Hi);
    }
    LS_HD static int sub_scale(const WB&, int) { return 1; }
    LS_HD static void step(const WB& x, const AB& y, Isum s, float& sum, float&) {
        sum = sum + (mxfp4_scale(x.e) * h2f(y.d)) * static_cast<float>(s.i);
    }
    static constexpr bool has_min = false;
};
template <> struct WDot<DType::IQ4_XS> {
    using WB = BlockIQ4_XS;
    using AB = BlockQ8_K;
    static constexpr int kSub = 32;
    LS_HD static uint32_t value4(const WB& x, int e) {
        return lut4((ld4(x.qs + 16 * (e / 32) + e % 16) >> (4 * ((e % 32) / 16))) & 0x0F0F0F0Fu, kIQ4NLLo, kIQ4NLHi);
    }
    LS_HD static int sub_scale(const WB& x, int s) { return iq4xs_scale(x, s); }
    LS_HD static void step(const WB& x, const AB& y, Isum s, float& sum, float&) {
        sum = sum + (y.d * h2f(x.d)) * static_cast<float>(s.i);
    }
    static constexpr bool has_min = false;
};
// The ternary types: one scale per 256 elements, so sub-blocks of 32 with scale 1 (the
// tensor-core tile's m16n8k32).
template <> struct WDot<DType::TQ1_0> {
    using WB = BlockTQ1_0;
    using AB = BlockQ8_K;
    static constexpr int kSub = 32;
    // Elements 0..159: digit e/32 of qs[e % 32]; 160..239: digit (e-160)/16 of
    // qs[32 + e % 16]; 240..255: digit (e-240)/4 of qh[e % 4] (four consecutive elements
    // share the digit and take consecutive bytes).
    LS_HD static uint32_t value4(const WB& x, int e) {
        if (e < 160) return tq1_digits4(ld4(x.qs + e % 32), e / 32);
        if (e < 240) return tq1_digits4(ld4(x.qs + 32 + e % 16), (e - 160) / 16);
        return tq1_digits4(ld4(x.qh), (e - 240) / 4);
    }
    LS_HD static int sub_scale(const WB&, int) { return 1; }
    LS_HD static void step(const WB& x, const AB& y, Isum s, float& sum, float&) {
        sum = sum + (y.d * h2f(x.d)) * static_cast<float>(s.i);
    }
    static constexpr bool has_min = false;
};
template <> struct WDot<DType::TQ2_0> {
    using WB = BlockTQ2_0;
    using AB = BlockQ8_K;
    static constexpr int kSub = 32;
    LS_HD static uint32_t value4(const WB& x, int e) {
        return sub_bytes((ld4(x.qs + 32 * (e / 128) + e % 32) >> (2 * ((e % 128) / 32))) & 0x03030303u, 1);
    }
    LS_HD static int sub_scale(const WB&, int) { return 1; }
    LS_HD static void step(const WB& x, const AB& y, Isum s, float& sum, float&) {
        sum = sum + (y.d * h2f(x.d)) * static_cast<float>(s.i);
    }
    static constexpr bool has_min = false;
};

// The grid i-quants: value4 reads the codebook entry of the group (8 elements; IQ3 4), a word
// of it per four elements, with the signs (IQ2, IQ3) or the delta (IQ1) applied; sub-blocks
// of kIqSub (16 or 32) elements with scale ls = 2 * s + 1; one f16 scale per 256 elements.
// Elements are integers d * ls * v / den (iq_access.h): the chain multiplies by 1 / den once,
// in finish (kDen).

// The f16 block scale: the field d, but for IQ1_M's, assembled from the top nibbles of its
// four u16 scale words (iq_access.h's iq1m_d).
LS_HD inline int iq1m_word(const BlockIQ1_M& x, int w) { return x.scales[2 * w] | (x.scales[2 * w + 1] << 8); }
template <class B> LS_HD inline float iq_d(const B& x) { return h2f(x.d); }
LS_HD inline float iq_d(const BlockIQ1_M& x) {
    return h2f(uint16_t((iq1m_word(x, 0) >> 12) | ((iq1m_word(x, 1) >> 8) & 0x00F0) | ((iq1m_word(x, 2) >> 4) & 0x0F00) |
                        (iq1m_word(x, 3) & 0xF000)));
}
template <class B> struct IqDot {
    using WB = B;
    using AB = BlockQ8_K;
    static constexpr int kSub = kIqSub<B>;
    static constexpr int kDen = kIqDen<B>;
    LS_HD static void step(const WB& x, const AB& y, Isum s, float& sum, float&) {
        sum = sum + (y.d * iq_d(x)) * static_cast<float>(s.i);
    }
    static constexpr bool has_min = false;
};
template <> struct WDot<DType::IQ2_XXS> : IqDot<BlockIQ2_XXS> {
    // Sub-block ib: grid indices qs[8ib..8ib+3], then a u32 of four 7-bit sign indices and the scale.
    LS_HD static uint32_t value4(const WB& x, int e) {
        const int ib = e / 32, l = (e % 32) / 8, h = (e % 8) / 4;
        const uint32_t aux = ld4(x.qs + 8 * ib + 4);
        return sign4(iq2xxs_grid(2 * x.qs[8 * ib + l] + h), iq_signs(int((aux >> (7 * l)) & 127)) >> (4 * h));
    }
    LS_HD static int sub_scale(const WB& x, int s) { return 2 * int(ld4(x.qs + 8 * s + 4) >> 28) + 1; }
};
template <> struct WDot<DType::IQ2_XS> : IqDot<BlockIQ2_XS> {
    // Group g: qs[g] holds the grid index (bits 0..8) and the sign index (9..15).
    LS_HD static uint32_t value4(const WB& x, int e) {
        const int q = x.qs[e / 8], h = (e % 8) / 4;
        return sign4(iq2xs_grid(2 * (q & 511) + h), iq_signs(q >> 9) >> (4 * h));
    }
    LS_HD static int sub_scale(const WB& x, int s) { return iq_nibble_scale(x.scales, s); }
};
template <> struct WDot<DType::IQ2_S> : IqDot<BlockIQ2_S> {
    // Group g: index qs[g] with two bits of qh[g / 4] above it, its 8 sign bits in qs[32 + g].
    LS_HD static uint32_t value4(const WB& x, int e) {
        const int g = e / 8, h = (e % 8) / 4;
        const int idx = x.qs[g] | (((x.qh[g / 4] >> (2 * (g % 4))) & 3) << 8);
        return sign4(iq2s_grid(2 * idx + h), uint32_t(x.qs[32 + g]) >> (4 * h));
    }
    LS_HD static int sub_scale(const WB& x, int s) { return iq_nibble_scale(x.scales, s); }
};
template <> struct WDot<DType::IQ3_XXS> : IqDot<BlockIQ3_XXS> {
    // An index of 4 elements qs[e / 4]; sub-block ib's u32 of sign indices and scale at qs[64 + 4ib].
    LS_HD static uint32_t value4(const WB& x, int e) {
        const int ib = e / 32, l = (e % 32) / 8, h = (e % 8) / 4;
        const uint32_t aux = ld4(x.qs + 64 + 4 * ib);
        return sign4(iq3xxs_grid(x.qs[e / 4]), iq_signs(int((aux >> (7 * l)) & 127)) >> (4 * h));
    }
    LS_HD static int sub_scale(const WB& x, int s) { return 2 * int(ld4(x.qs + 64 + 4 * s) >> 28) + 1; }
};
template <> struct WDot<DType::IQ3_S> : IqDot<BlockIQ3_S> {
    // Index k = e / 4: qs[k] with bit k % 8 of qh[k / 8] above it; sign bits in signs[e / 8].
    LS_HD static uint32_t value4(const WB& x, int e) {
        const int k = e / 4;
        const int idx = x.qs[k] | (((x.qh[k / 8] >> (k % 8)) & 1) << 8);
        return sign4(iq3s_grid(idx), uint32_t(x.signs[e / 8]) >> (e % 8));
    }
    LS_HD static int sub_scale(const WB& x, int s) { return iq_nibble_scale(x.scales, s); }
};
template <> struct WDot<DType::IQ1_S> : IqDot<BlockIQ1_S> {
    // Group g: index qs[g] with three bits of qh[g / 4] above it; qh[ib] bits 12..14 the
    // scale, bit 15 the delta's sign.
    LS_HD static uint32_t value4(const WB& x, int e) {
        const int g = e / 8, h = (e % 8) / 4;
        const int qh = x.qh[g / 4];
        return iq1_value4(iq1s_grid(2 * (x.qs[g] | (((qh >> (3 * (g % 4))) & 7) << 8)) + h), (qh & 0x8000) != 0);
    }
    LS_HD static int sub_scale(const WB& x, int s) { return 2 * ((x.qh[s] >> 12) & 7) + 1; }
};
template <> struct WDot<DType::IQ1_M> : IqDot<BlockIQ1_M> {
    // Group g: index qs[g] with bits 0..2 of nibble g % 2 of qh[g / 2] above it, bit 3 the
    // delta's sign; 3-bit scale t in bits 3(t % 4).. of u16 t / 4 of scales.
    LS_HD static uint32_t value4(const WB& x, int e) {
        const int g = e / 8, h = (e % 8) / 4;
        const int nib = (x.qh[g / 2] >> (4 * (g % 2))) & 0x0F;
        return iq1_value4(iq1s_grid(2 * (x.qs[g] | ((nib & 7) << 8)) + h), (nib & 8) != 0);
    }
    LS_HD static int sub_scale(const WB& x, int s) { return 2 * ((iq1m_word(x, s / 4) >> (3 * (s % 4))) & 7) + 1; }
};

// Element e of a row of grid i-quants of type W, as quant_iq.cpp's dequant: the sub-block's
// float scale in the gguf package's order (IQ2: d * (0.5 + s) * 0.25, IQ3_XXS: d * (0.5 + s)
// * 0.5, IQ3_S and IQ1: d * ls), times the value (IQ1: times value / 8, exact).
template <DType W> LS_HD inline float iq_deq(const uint8_t* row, int64_t e) {
    using D = WDot<W>;
    using B = typename D::WB;
    const auto& b = reinterpret_cast<const B*>(row)[e / QK_K];
    const int i = int(e % QK_K);
    const float d = iq_d(b);
    const int ls = D::sub_scale(b, i / D::kSub);
    const int v = int(int8_t(uint8_t(D::value4(b, i & ~3) >> (8 * (i & 3)))));
    constexpr bool iq1 = std::is_same_v<B, BlockIQ1_S> || std::is_same_v<B, BlockIQ1_M>;
    float db;
    if constexpr (D::kDen == 8 && !iq1) db = d * (0.5f + static_cast<float>((ls - 1) / 2)) * 0.25f;
    else if constexpr (D::kDen == 4) db = d * (0.5f + static_cast<float>((ls - 1) / 2)) * 0.5f;
    else db = d * static_cast<float>(ls);
    if constexpr (iq1) return db * (static_cast<float>(v) * 0.125f);
    else return db * static_cast<float>(v);
}

// The quantized weight types of the integer path: calls f(std::integral_constant<DType, t>{})
// so that a kernel template can be instantiated per type; false for any other type.
template <class F>
bool with_quant_weight(DType t, F&& f) {
    switch (t) {
#define LS_QW(T) \
    case DType::T: f(std::integral_constant<DType, DType::T>{}); return true;
        LS_QW(Q4_0) LS_QW(Q4_1) LS_QW(Q5_0) LS_QW(Q5_1) LS_QW(Q8_0) LS_QW(Q2_K) LS_QW(Q3_K) LS_QW(Q4_K) LS_QW(Q5_K) LS_QW(Q6_K)
        LS_QW(IQ4_NL) LS_QW(IQ4_XS) LS_QW(MXFP4) LS_QW(TQ1_0) LS_QW(TQ2_0)
        LS_QW(IQ2_XXS) LS_QW(IQ2_XS) LS_QW(IQ2_S) LS_QW(IQ3_XXS) LS_QW(IQ3_S) LS_QW(IQ1_S) LS_QW(IQ1_M)
#undef LS_QW
        default: return false;
    }
}

template <DType W> constexpr int kBlockElems = sizeof(typename WDot<W>::AB) == sizeof(BlockQ8_K) ? QK_K : QK;

// Sub-blocks per block.
template <DType W> constexpr int kSubsPerBlock = kBlockElems<W> / WDot<W>::kSub;

// The integer part of sub-block s of a block's dot product: the byte dot products times the
// sub-block's scale, and the sub-block's min term (types with mins).
template <DType W> LS_HD inline Isum sub_isum(const typename WDot<W>::WB& x, const typename WDot<W>::AB& y, int s) {
    using D = WDot<W>;
    int si = 0;
    for (int e = s * D::kSub; e < (s + 1) * D::kSub; e += 4) si += dot4(D::value4(x, e), ld4(y.qs + e));
    Isum r;
    r.i = D::sub_scale(x, s) * si;
    if constexpr (D::has_min) r.m = D::min_sub(x, y, s);
    return r;
}

// Four bytes from a 4-byte aligned p, and sixteen from a 16-byte aligned p, each as one
// load on the device (the host checks the alignment, so that the emulated kernels would
// catch a caller that breaks it).
LS_HD inline uint32_t ld4a(const void* p) {
#if defined(__CUDA_ARCH__)
    return *static_cast<const uint32_t*>(p);
#else
    if (reinterpret_cast<uintptr_t>(p) % 4 != 0) __builtin_trap();
    return ld32(static_cast<const uint8_t*>(p));
#endif
}
LS_HD inline void ld16(const void* p, uint32_t (&w)[4]) {
#if defined(__CUDA_ARCH__)
    const uint4 v = *static_cast<const uint4*>(p);
    w[0] = v.x, w[1] = v.y, w[2] = v.z, w[3] = v.w;
#else
    if (reinterpret_cast<uintptr_t>(p) % 16 != 0) __builtin_trap();
    for (int i = 0; i < 4; ++i) w[i] = ld32(static_cast<const uint8_t*>(p) + 4 * i);
#endif
}

// Q4_K (most of a Q4_K_M file's weights) for lane j (0..7) of a block's eight in the decode
// kernel, where the block is 16-byte aligned (its 144 bytes keep every block of such a row
// aligned): one 16-byte load of qs bytes 16j..16j+15, which hold elements 16(j%2)..+15 of
// sub-block 2(j/2) (low nibbles) and of sub-block 2(j/2)+1 (high nibbles), and the min
// term of sub-block j. Over the eight lanes, the integers of sub_isum over the eight
// sub-blocks (exact: any grouping), in 9 loads a lane instead of 34 two-byte ones.
LS_HD inline Isum q4k_lane_isum(const BlockQ4_K& x, const BlockQ8_K& y, int j) {
    const int sa = 2 * (j / 2);
    uint32_t q[4];
    ld16(x.qs + 16 * j, q);
    const int8_t* ya = y.qs + 32 * sa + 16 * (j % 2);
    int da = 0, db = 0;
    for (int w = 0; w < 4; ++w) {
        da += dot4(q[w] & 0x0F0F0F0Fu, ld4a(ya + 4 * w));
        db += dot4((q[w] >> 4) & 0x0F0F0F0Fu, ld4a(ya + 32 + 4 * w));
    }
    Isum r;
    r.i = k4_scale(x.scales, sa) * da + k4_scale(x.scales, sa + 1) * db;
    r.m = k4_min_sub(x.scales, y.bsums, j);
    return r;
}

// The integer part of one block's dot product: the sum of its sub-blocks' (exact, so any
// order and grouping of the sub-blocks gives it: the decode kernel gives each its own lane).
template <DType W> LS_HD inline Isum isum(const typename WDot<W>::WB& x, const typename WDot<W>::AB& y) {
    Isum r;
    for (int s = 0; s < kSubsPerBlock<W>; ++s) {
        const Isum p = sub_isum<W>(x, y, s);
        r.i += p.i;
        r.m += p.m;
    }
    return r;
}
// The min term of a whole block (types with mins).
template <DType W> LS_HD inline int min_isum(const typename WDot<W>::WB& x, const typename WDot<W>::AB& y) {
    int m = 0;
    for (int s = 0; s < kSubsPerBlock<W>; ++s) m += WDot<W>::min_sub(x, y, s);
    return m;
}

// The denominator of a type's integer values (the grid i-quants' kDen), 1 for the others.
template <class D, class = void> constexpr int kDenOf = 1;
template <class D> constexpr int kDenOf<D, std::void_t<decltype(D::kDen)>> = D::kDen;

// The end of the chain: the min term subtracted, or one multiplication by 1 / den (a power
// of two), as the references do after their block loops.
template <DType W> LS_HD inline float finish(float sum, float msum) {
    if constexpr (WDot<W>::has_min) return sum - msum;
    else if constexpr (kDenOf<WDot<W>> != 1) return sum * (1.0f / static_cast<float>(kDenOf<WDot<W>>));
    else return sum;
}

// The whole row, serially: the sequence the kernel reproduces (its threads compute the
// integer parts of different blocks, then the chain runs over the blocks in order).
template <DType W> LS_HD inline float row_dot(const uint8_t* wrow, const uint8_t* arow, int64_t nb) {
    using D = WDot<W>;
    const auto* x = reinterpret_cast<const typename D::WB*>(wrow);
    const auto* y = reinterpret_cast<const typename D::AB*>(arow);
    float sum = 0, msum = 0;
    for (int64_t b = 0; b < nb; ++b) D::step(x[b], y[b], isum<W>(x[b], y[b]), sum, msum);
    return finish<W>(sum, msum);
}

// Term e of a float-type weight row's dot product with its activation row, the float
// product (rounded) that canon_sum adds (F16 weights dot F16 activations, F32 and BF16
// weights dot F32 activations), as vec_dot_ref.
LS_HD inline float prod_f(DType w, const uint8_t* wrow, const uint8_t* arow, int64_t e) {
    switch (w) {
        case DType::F32: return ldf(wrow + 4 * e) * ldf(arow + 4 * e);
        case DType::F16: return h2f(ldh(wrow + 2 * e)) * h2f(ldh(arow + 2 * e));
        case DType::BF16: return bf2f(ldh(wrow + 2 * e)) * ldf(arow + 4 * e);
        default: return NAN;
    }
}

// Weight types mul_mat runs (those vec_dot_ref supports).
LS_HD inline bool mul_mat_supported(DType w) {
    switch (w) {
        case DType::F32: case DType::F16: case DType::BF16: case DType::Q4_0: case DType::Q4_1:
        case DType::Q5_0: case DType::Q5_1: case DType::Q8_0: case DType::Q2_K: case DType::Q3_K:
        case DType::Q4_K: case DType::Q5_K: case DType::Q6_K: case DType::IQ4_NL: case DType::IQ4_XS:
        case DType::MXFP4: case DType::TQ1_0: case DType::TQ2_0: case DType::IQ2_XXS: case DType::IQ2_XS:
        case DType::IQ2_S: case DType::IQ3_XXS: case DType::IQ3_S: case DType::IQ1_S: case DType::IQ1_M:
            return true;
        default:
            return false;
    }
}

}  // namespace ls::cudaq
