// Shared by every shader: buffer-address access, the exact conversions of
// core/quant/quant.cpp and the canonical arithmetic (shaders/canon.glsl, core/rules/canon.h),
// operation for operation.
//
// No shader uses 64-bit types: Intel, Apple (MoltenVK) and mobile GPUs have no float64, and
// buffer addresses are uvec2(low word, high word) (GL_EXT_buffer_reference_uvec2), advanced
// by a 32-bit offset with an explicit carry. f32->f16 rounding, division and sqrt are computed
// from the bits (Vulkan leaves their rounding loose); every float expression whose rounding
// the contract fixes is `precise`, so it is never contracted into an fma.
#extension GL_EXT_buffer_reference2 : require
#extension GL_EXT_buffer_reference_uvec2 : require
#extension GL_EXT_shader_8bit_storage : require
#extension GL_EXT_shader_16bit_storage : require
// [[unroll]] on loops over small fixed arrays: unrolled, their indices are constants and the
// arrays stay in registers (lavapipe keeps a dynamically indexed array in memory, per lane).
#extension GL_EXT_control_flow_attributes : require
// int32_t / uint32_t: the field types of push.h and core/ir/op_params.h (no 64-bit types).
#extension GL_EXT_shader_explicit_arithmetic_types_int32 : require
// LS_TYPE_*: the GGUF type ids of the `type` push-constant fields and the WTYPE / ATYPE
// defines of the variants (one definition for C++, CUDA, GLSL and CMake).
#include "core/quant/dtype_ids.h"
// The push-constant blocks (one definition with the host) and addr_t.
#include "shaders/push.h"
#include "shaders/canon.glsl"

// The device's subgroup size, subgroup operations in compute (VK_SUBGROUP_FEATURE_*_BIT)
// and shared memory per workgroup in bytes, as queried at init (backends/vulkan/vk_device.cpp).
layout(constant_id = 0) const uint SUBGROUP_SIZE = 1u;
layout(constant_id = 1) const uint SUBGROUP_OPS = 0u;
layout(constant_id = 2) const uint SHARED_BYTES = 16384u;

// a + off and a + i * nb (the product in 64 bits: umulExtended), with the carry.
addr_t addr_add(addr_t a, uint off) {
    uint c;
    const uint lo = uaddCarry(a.x, off, c);
    return addr_t(lo, a.y + c);
}
addr_t addr_mad(addr_t a, uint i, uint nb) {
    uint phi, plo, c;
    umulExtended(i, nb, phi, plo);
    const uint lo = uaddCarry(a.x, plo, c);
    return addr_t(lo, a.y + phi + c);
}

layout(buffer_reference, std430, buffer_reference_align = 1) buffer U8 { uint8_t v[]; };
layout(buffer_reference, std430, buffer_reference_align = 2) buffer U16 { uint16_t v[]; };
layout(buffer_reference, std430, buffer_reference_align = 1) buffer I8 { int8_t v[]; };
layout(buffer_reference, std430, buffer_reference_align = 4) buffer F32 { float v[]; };
layout(buffer_reference, std430, buffer_reference_align = 4) buffer I32 { int v[]; };
layout(buffer_reference, std430, buffer_reference_align = 4) buffer U32 { uint v[]; };

// A query's first visible key, attn_first_of (core/rules/attention_rule.h): window -1
// (kAttnFirstGiven) reads it from row 1 of the [T, 2] position input.
int attn_first(addr_t pos, uint t, uint T, int pt, int W) {
    if (W == -1) return I32(pos).v[T + t];
    return W > 0 ? max(0, pt - W + 1) : 0;
}

uint ld8(addr_t a, uint i) { return uint(U8(a).v[i]); }
int lds8(addr_t a, uint i) { return int(I8(a).v[i]); }
uint ld16(addr_t a, uint i) { return ld8(a, i) | (ld8(a, i + 1) << 8); }
int lds16(addr_t a, uint i) { return int(ld16(a, i) << 16) >> 16; }
uint ld32(addr_t a, uint i) { return ld16(a, i) | (ld16(a, i + 2) << 16); }
// Wide loads at an even address p (p % 4 == 0 or 2): 32 / 16 bytes as little-endian words,
// with aligned 32-bit loads (a 2-aligned start takes a 16-bit load at each end) and never a
// byte outside [p, p + n).
// Their forms at a 4-byte aligned p (ldw*a): no test of the address. Where a workgroup runs
// as SIMD lanes of a CPU thread (lavapipe) both sides of the test run, each load a loop over
// the lanes.
void ldw8a(addr_t p, out uint w[8]) { for (uint i = 0u; i < 8u; ++i) w[i] = U32(p).v[i]; }
void ldw4a(addr_t p, out uint w[4]) { for (uint i = 0u; i < 4u; ++i) w[i] = U32(p).v[i]; }
uint ldw1a(addr_t p) { return U32(p).v[0]; }
void ldw8(addr_t p, out uint w[8]) {
    if ((p.x & 3u) == 0u) {
        ldw8a(p, w);
    } else {
        uint prev = uint(U16(p).v[0]);
        const addr_t q = addr_add(p, 2u);
        [[unroll]] for (uint i = 0u; i < 7u; ++i) {
            const uint x = U32(q).v[i];
            w[i] = prev | (x << 16);
            prev = x >> 16;
        }
        w[7] = prev | (uint(U16(addr_add(p, 30u)).v[0]) << 16);
    }
}
void ldw4(addr_t p, out uint w[4]) {
    if ((p.x & 3u) == 0u) {
        ldw4a(p, w);
    } else {
        uint prev = uint(U16(p).v[0]);
        const addr_t q = addr_add(p, 2u);
        [[unroll]] for (uint i = 0u; i < 3u; ++i) {
            const uint x = U32(q).v[i];
            w[i] = prev | (x << 16);
            prev = x >> 16;
        }
        w[3] = prev | (uint(U16(addr_add(p, 14u)).v[0]) << 16);
    }
}
uint ldw1(addr_t p) {
    if ((p.x & 3u) == 0u) return ldw1a(p);
    return uint(U16(p).v[0]) | (uint(U16(addr_add(p, 2u)).v[0]) << 16);
}
uint ldh(addr_t p) { return uint(U16(p).v[0]); }  // p even
// Signed byte k of a word.
int sb(uint w, uint k) { return int(w << (24u - 8u * k)) >> 24; }

// ---- element values of the lookup-table and ternary types (core/quant/block_access.h)
#include "core/quant/quant_levels.h"
// IQ4_NL / IQ4_XS and MXFP4 level of index i (0..15): a byte of four constant words, so no
// table sits in memory.
int iq4nl_level(uint i) { const uvec4 t = uvec4(LS_IQ4NL_LEVEL_WORDS); return sb(t[i >> 2], i & 3u); }
int mxfp4_level(uint i) { const uvec4 t = uvec4(LS_MXFP4_LEVEL_WORDS); return sb(t[i >> 2], i & 3u); }
// MXFP4's scale 2^(e - 128) from its bits (mxfp4_scale_bits; subnormal for e < 2).
float mxfp4_scale(uint e) { return uintBitsToFloat(e < 2u ? 0x00200000u << e : (e - 1u) << 23); }
// TQ1_0: the digit (-1..1) that multiplier p = 3^n picks from a base-3 fraction byte (tq1_value).
int tq1_digit(uint byte, uint p) { return int((((byte * p) & 0xFFu) * 3u) >> 8) - 1; }

void st8(addr_t a, uint i, uint v) { U8(a).v[i] = uint8_t(v); }
void st16(addr_t a, uint i, uint v) { st8(a, i, v & 0xFFu); st8(a, i + 1, v >> 8); }

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

// ---- element e of a row of a cache / get_rows type (core/quant_*.cpp dequantizers)
float dequant_elem(uint type, addr_t row, uint e) {
    if (type == LS_TYPE_F32) return F32(row).v[e];
    if (type == LS_TYPE_F16) return h2f(uint(U16(row).v[e]));  // rows of 2-byte types are 2-aligned
    if (type == LS_TYPE_BF16) return bf2f(uint(U16(row).v[e]));
    const uint j = e % 32u;
    if (type == LS_TYPE_Q4_0 || type == LS_TYPE_Q4_1 || type == LS_TYPE_Q5_0 || type == LS_TYPE_Q5_1 || type == LS_TYPE_Q8_0) {
        if (type == LS_TYPE_Q8_0) {
            const addr_t b = addr_mad(row, e / 32u, 34u);
            precise float v = h2f(ld16(b, 0u)) * float(lds8(b, 2u + j));
            return v;
        }
        const uint bs = type == LS_TYPE_Q4_0 ? 18u : type == LS_TYPE_Q4_1 ? 20u : type == LS_TYPE_Q5_0 ? 22u : 24u;
        const addr_t b = addr_mad(row, e / 32u, bs);
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
    if (type == LS_TYPE_IQ4_NL || type == LS_TYPE_MXFP4) {  // 18- / 17-byte blocks: byte loads
        const bool nl = type == LS_TYPE_IQ4_NL;
        const addr_t b = addr_mad(row, e / 32u, nl ? 18u : 17u);
        const uint qs = nl ? 2u : 1u;
        const uint i = j < 16u ? (ld8(b, qs + j) & 15u) : (ld8(b, qs + j - 16u) >> 4);
        if (nl) { precise float v = h2f(ld16(b, 0u)) * float(iq4nl_level(i)); return v; }
        precise float v = mxfp4_scale(ld8(b, 0u)) * float(mxfp4_level(i));
        return v;
    }
    const addr_t bk = addr_mad(row, e / 256u, type == LS_TYPE_Q2_K ? 84u : type == LS_TYPE_Q3_K ? 110u : type == LS_TYPE_Q4_K ? 144u
                                                   : type == LS_TYPE_Q5_K ? 176u : type == LS_TYPE_Q6_K ? 210u
                                                   : type == LS_TYPE_IQ4_XS ? 136u : type == LS_TYPE_TQ1_0 ? 54u
                                                   : type == LS_TYPE_TQ2_0 ? 66u : 292u);
    const uint el = e % 256u;
    if (type == LS_TYPE_IQ4_XS) {
        const uint s = el / 32u, l = el % 32u;
        const uint lo = (ld8(bk, 4u + s / 2u) >> (4u * (s % 2u))) & 15u, hi = (ld16(bk, 2u) >> (2u * s)) & 3u;
        const uint i = l < 16u ? (ld8(bk, 8u + 16u * s + l) & 15u) : (ld8(bk, 8u + 16u * s + l - 16u) >> 4);
        precise float dl = h2f(ld16(bk, 0u)) * float(int(lo | (hi << 4)) - 32);
        precise float v = dl * float(iq4nl_level(i));
        return v;
    }
    if (type == LS_TYPE_TQ1_0) {
        uint byte, n;
        if (el < 160u) { byte = ld8(bk, el % 32u); n = el / 32u; }
        else if (el < 240u) { byte = ld8(bk, 32u + (el - 160u) % 16u); n = (el - 160u) / 16u; }
        else { byte = ld8(bk, 48u + (el - 240u) % 4u); n = (el - 240u) / 4u; }
        uint p = 1u;
        for (uint k = 0u; k < n; ++k) p *= 3u;
        precise float v = h2f(ld16(bk, 52u)) * float(tq1_digit(byte, p));
        return v;
    }
    if (type == LS_TYPE_TQ2_0) {
        const uint n = el / 128u, jj = (el % 128u) / 32u, l = el % 32u;
        const int x = int((ld8(bk, 32u * n + l) >> (2u * jj)) & 3u) - 1;
        precise float v = h2f(ld16(bk, 64u)) * float(x);
        return v;
    }
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
