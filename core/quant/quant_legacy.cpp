// Reference (de)quantization and dot products of the 32-element block types
// Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q8_1.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/quant/block_access.h"
#include "core/quant/quant.h"
#include "core/quant/quant_blocks.h"
#include "core/quant/quant_impl.h"

namespace ls::qref {
using namespace ls::qb;

namespace {
// The element of largest magnitude (keeping its sign).
float signed_absmax(const float* x, int n) {
    float amax = 0, m = 0;
    for (int i = 0; i < n; ++i)
        if (std::fabs(x[i]) > amax) { amax = std::fabs(x[i]); m = x[i]; }
    return m;
}
}  // namespace

void dequant_q4_0(const void* src, float* y, int64_t nb) {
    const auto* b = static_cast<const BlockQ4_0*>(src);
    for (int64_t i = 0; i < nb; ++i, y += QK) {
        const float d = fp16_to_fp32(b[i].d);
        for (int j = 0; j < QK; ++j) y[j] = d * static_cast<float>(nibble(b[i].qs, j) - 8);
    }
}
void dequant_q4_1(const void* src, float* y, int64_t nb) {
    const auto* b = static_cast<const BlockQ4_1*>(src);
    for (int64_t i = 0; i < nb; ++i, y += QK) {
        const float d = fp16_to_fp32(b[i].d), m = fp16_to_fp32(b[i].m);
        for (int j = 0; j < QK; ++j) y[j] = d * static_cast<float>(nibble(b[i].qs, j)) + m;
    }
}
void dequant_q5_0(const void* src, float* y, int64_t nb) {
    const auto* b = static_cast<const BlockQ5_0*>(src);
    for (int64_t i = 0; i < nb; ++i, y += QK) {
        const float d = fp16_to_fp32(b[i].d);
        const uint32_t qh = load_qh(b[i].qh);
        for (int j = 0; j < QK; ++j)
            y[j] = d * static_cast<float>((nibble(b[i].qs, j) | (fifth_bit(qh, j) << 4)) - 16);
    }
}
void dequant_q5_1(const void* src, float* y, int64_t nb) {
    const auto* b = static_cast<const BlockQ5_1*>(src);
    for (int64_t i = 0; i < nb; ++i, y += QK) {
        const float d = fp16_to_fp32(b[i].d), m = fp16_to_fp32(b[i].m);
        const uint32_t qh = load_qh(b[i].qh);
        for (int j = 0; j < QK; ++j)
            y[j] = d * static_cast<float>(nibble(b[i].qs, j) | (fifth_bit(qh, j) << 4)) + m;
    }
}
void dequant_q8_0(const void* src, float* y, int64_t nb) {
    const auto* b = static_cast<const BlockQ8_0*>(src);
    for (int64_t i = 0; i < nb; ++i, y += QK) {
        const float d = fp16_to_fp32(b[i].d);
        for (int j = 0; j < QK; ++j) y[j] = d * static_cast<float>(b[i].qs[j]);
    }
}
void dequant_q8_1(const void* src, float* y, int64_t nb) {
    const auto* b = static_cast<const BlockQ8_1*>(src);
    for (int64_t i = 0; i < nb; ++i, y += QK) {
        const float d = fp16_to_fp32(b[i].d);
        for (int j = 0; j < QK; ++j) y[j] = d * static_cast<float>(b[i].qs[j]);
    }
}

// --- quantizers: round to nearest (ties to even) with the block's scale ---

namespace {
// Symmetric types: the largest-magnitude element maps to -half (e.g. -8 for 4 bits), so the
// full signed range [-half, half-1] is used; the result is stored with offset +half.
template <int Half>
void quant_sym_block(const float* x, uint16_t& dh, int (&q)[QK]) {
    const float mx = signed_absmax(x, QK);
    const float d = mx / static_cast<float>(-Half);
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    dh = fp32_to_fp16(d);
    for (int j = 0; j < QK; ++j) q[j] = std::clamp(rne(x[j] * id) + Half, 0, 2 * Half - 1);
}
// Asymmetric types: x ~ d*q + m with m = min(x), q in [0, levels-1].
template <int Levels>
void quant_asym_block(const float* x, uint16_t& dh, uint16_t& mh, int (&q)[QK]) {
    float mn = x[0], mx = x[0];
    for (int j = 1; j < QK; ++j) { mn = std::min(mn, x[j]); mx = std::max(mx, x[j]); }
    const float d = (mx - mn) / static_cast<float>(Levels - 1);
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    dh = fp32_to_fp16(d);
    mh = fp32_to_fp16(mn);
    for (int j = 0; j < QK; ++j) q[j] = std::clamp(rne((x[j] - mn) * id), 0, Levels - 1);
}
void pack_nibbles(const int (&q)[QK], uint8_t* qs) {
    for (int j = 0; j < 16; ++j) qs[j] = static_cast<uint8_t>((q[j] & 0x0F) | ((q[j + 16] & 0x0F) << 4));
}
void pack_fifth(const int (&q)[QK], uint8_t* qh) {
    uint32_t h = 0;
    for (int j = 0; j < QK; ++j) h |= static_cast<uint32_t>((q[j] >> 4) & 1) << j;
    std::memcpy(qh, &h, 4);
}
}  // namespace

void quant_q4_0(const float* x, void* dst, int64_t nb) {
    auto* b = static_cast<BlockQ4_0*>(dst);
    for (int64_t i = 0; i < nb; ++i, x += QK) {
        int q[QK];
        quant_sym_block<8>(x, b[i].d, q);
        pack_nibbles(q, b[i].qs);
    }
}
void quant_q4_1(const float* x, void* dst, int64_t nb) {
    auto* b = static_cast<BlockQ4_1*>(dst);
    for (int64_t i = 0; i < nb; ++i, x += QK) {
        int q[QK];
        quant_asym_block<16>(x, b[i].d, b[i].m, q);
        pack_nibbles(q, b[i].qs);
    }
}
void quant_q5_0(const float* x, void* dst, int64_t nb) {
    auto* b = static_cast<BlockQ5_0*>(dst);
    for (int64_t i = 0; i < nb; ++i, x += QK) {
        int q[QK];
        quant_sym_block<16>(x, b[i].d, q);
        pack_nibbles(q, b[i].qs);
        pack_fifth(q, b[i].qh);
    }
}
void quant_q5_1(const float* x, void* dst, int64_t nb) {
    auto* b = static_cast<BlockQ5_1*>(dst);
    for (int64_t i = 0; i < nb; ++i, x += QK) {
        int q[QK];
        quant_asym_block<32>(x, b[i].d, b[i].m, q);
        pack_nibbles(q, b[i].qs);
        pack_fifth(q, b[i].qh);
    }
}

// Q8_0 / Q8_1 (also the activation quantizers; cpu::quantize_row_act must match bit for bit):
// d = amax/127, q = rne(x * (127/amax)), so |q| <= 127 (never -128).
namespace {
int q8_block(const float* x, int8_t* qs, float& d) {
    float amax = 0;
    for (int j = 0; j < QK; ++j) amax = std::max(amax, std::fabs(x[j]));
    d = amax / 127.0f;
    const float id = amax != 0.0f ? 127.0f / amax : 0.0f;
    int sum = 0;
    for (int j = 0; j < QK; ++j) {
        qs[j] = static_cast<int8_t>(rne(x[j] * id));
        sum += qs[j];
    }
    return sum;
}
}  // namespace

void quant_q8_0(const float* x, void* dst, int64_t nb) {
    auto* b = static_cast<BlockQ8_0*>(dst);
    for (int64_t i = 0; i < nb; ++i, x += QK) {
        float d;
        q8_block(x, b[i].qs, d);
        b[i].d = fp32_to_fp16(d);
    }
}
void quant_q8_1(const float* x, void* dst, int64_t nb) {
    auto* b = static_cast<BlockQ8_1*>(dst);
    for (int64_t i = 0; i < nb; ++i, x += QK) {
        float d;
        const int sum = q8_block(x, b[i].qs, d);
        b[i].d = fp32_to_fp16(d);
        b[i].s = fp32_to_fp16(d * static_cast<float>(sum));
    }
}

// --- dot products: exact int32 block sums, then sum = sum + (dw*da) * sumi over blocks in
// order: the canonical float sequence of mul_mat (core/ref/mul_mat.cpp) ---

float dot_q4_0_q8_0(const void* w, const void* a, int64_t nb) {
    const auto* x = static_cast<const BlockQ4_0*>(w);
    const auto* y = static_cast<const BlockQ8_0*>(a);
    float sum = 0;
    for (int64_t i = 0; i < nb; ++i) {
        int sumi = 0;
        for (int j = 0; j < QK; ++j) sumi += (nibble(x[i].qs, j) - 8) * y[i].qs[j];
        sum = sum + (fp16_to_fp32(x[i].d) * fp16_to_fp32(y[i].d)) * static_cast<float>(sumi);
    }
    return sum;
}
float dot_q4_1_q8_1(const void* w, const void* a, int64_t nb) {
    const auto* x = static_cast<const BlockQ4_1*>(w);
    const auto* y = static_cast<const BlockQ8_1*>(a);
    float sum = 0;
    for (int64_t i = 0; i < nb; ++i) {
        int sumi = 0;
        for (int j = 0; j < QK; ++j) sumi += nibble(x[i].qs, j) * y[i].qs[j];
        // sum_j (d q_j + m) * dy y_j = d dy sumi + m * (dy sum_j y_j) = ... + m * s
        sum = sum + (fp16_to_fp32(x[i].d) * fp16_to_fp32(y[i].d)) * static_cast<float>(sumi);
        sum = sum + (fp16_to_fp32(x[i].m)) * fp16_to_fp32(y[i].s);
    }
    return sum;
}
float dot_q5_0_q8_0(const void* w, const void* a, int64_t nb) {
    const auto* x = static_cast<const BlockQ5_0*>(w);
    const auto* y = static_cast<const BlockQ8_0*>(a);
    float sum = 0;
    for (int64_t i = 0; i < nb; ++i) {
        const uint32_t qh = load_qh(x[i].qh);
        int sumi = 0;
        for (int j = 0; j < QK; ++j) sumi += ((nibble(x[i].qs, j) | (fifth_bit(qh, j) << 4)) - 16) * y[i].qs[j];
        sum = sum + (fp16_to_fp32(x[i].d) * fp16_to_fp32(y[i].d)) * static_cast<float>(sumi);
    }
    return sum;
}
float dot_q5_1_q8_1(const void* w, const void* a, int64_t nb) {
    const auto* x = static_cast<const BlockQ5_1*>(w);
    const auto* y = static_cast<const BlockQ8_1*>(a);
    float sum = 0;
    for (int64_t i = 0; i < nb; ++i) {
        const uint32_t qh = load_qh(x[i].qh);
        int sumi = 0;
        for (int j = 0; j < QK; ++j) sumi += (nibble(x[i].qs, j) | (fifth_bit(qh, j) << 4)) * y[i].qs[j];
        sum = sum + (fp16_to_fp32(x[i].d) * fp16_to_fp32(y[i].d)) * static_cast<float>(sumi);
        sum = sum + (fp16_to_fp32(x[i].m)) * fp16_to_fp32(y[i].s);
    }
    return sum;
}
float dot_q8_0_q8_0(const void* w, const void* a, int64_t nb) {
    const auto* x = static_cast<const BlockQ8_0*>(w);
    const auto* y = static_cast<const BlockQ8_0*>(a);
    float sum = 0;
    for (int64_t i = 0; i < nb; ++i) {
        int sumi = 0;
        for (int j = 0; j < QK; ++j) sumi += x[i].qs[j] * y[i].qs[j];
        sum = sum + (fp16_to_fp32(x[i].d) * fp16_to_fp32(y[i].d)) * static_cast<float>(sumi);
    }
    return sum;
}

}  // namespace ls::qref
