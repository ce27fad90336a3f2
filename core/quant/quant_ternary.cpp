// Reference (de)quantization and dot products of the ternary types TQ1_0 and TQ2_0 (BitNet
// b1.58 and TriLM weights: x in {-1, 0, 1} times one f16 scale per 256 elements), over Q8_K.
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
// x / amax rounded half away from zero (as the gguf package's np_roundf), plus 1: 0..2.
void ternary_digits(const float* x, uint16_t& dh, int (&q)[QK_K]) {
    float amax = 0;
    for (int e = 0; e < QK_K; ++e) amax = std::max(amax, std::fabs(x[e]));
    const float id = amax > 0 ? 1.0f / amax : 0.0f;
    for (int e = 0; e < QK_K; ++e) q[e] = static_cast<int>(std::round(x[e] * id)) + 1;
    dh = fp32_to_fp16(amax);
}
// n base-3 digits (most significant first) as a byte: the fraction v / 3^5 rounded up to
// 256ths, so that digit k is ((byte * 3^k mod 256) * 3) >> 8 (block_access.h tq1_value).
uint8_t pack_base3(const int* digits, int n, int stride) {
    int v = 0;
    for (int k = 0; k < 5; ++k) v = 3 * v + (k < n ? digits[k * stride] : 0);
    return static_cast<uint8_t>((v * 256 + 242) / 243);
}
}  // namespace

void dequant_tq1_0(const void* src, float* y, int64_t nb) {
    const auto* b = static_cast<const BlockTQ1_0*>(src);
    for (int64_t i = 0; i < nb; ++i, y += QK_K) {
        const float d = fp16_to_fp32(b[i].d);
        for (int e = 0; e < QK_K; ++e) y[e] = d * static_cast<float>(tq1_value(b[i], e));
    }
}

void dequant_tq2_0(const void* src, float* y, int64_t nb) {
    const auto* b = static_cast<const BlockTQ2_0*>(src);
    for (int64_t i = 0; i < nb; ++i, y += QK_K) {
        const float d = fp16_to_fp32(b[i].d);
        for (int e = 0; e < QK_K; ++e) y[e] = d * static_cast<float>(tq2_value(b[i], e));
    }
}

void quant_tq1_0(const float* x, void* dst, int64_t nb) {
    auto* b = static_cast<BlockTQ1_0*>(dst);
    for (int64_t i = 0; i < nb; ++i, x += QK_K) {
        int q[QK_K];
        ternary_digits(x, b[i].d, q);
        for (int m = 0; m < 32; ++m) b[i].qs[m] = pack_base3(q + m, 5, 32);
        for (int m = 0; m < 16; ++m) b[i].qs[32 + m] = pack_base3(q + 160 + m, 5, 16);
        for (int j = 0; j < 4; ++j) b[i].qh[j] = pack_base3(q + 240 + j, 4, 4);
    }
}

void quant_tq2_0(const float* x, void* dst, int64_t nb) {
    auto* b = static_cast<BlockTQ2_0*>(dst);
    for (int64_t i = 0; i < nb; ++i, x += QK_K) {
        int q[QK_K];
        ternary_digits(x, b[i].d, q);
        std::memset(b[i].qs, 0, sizeof b[i].qs);
        for (int e = 0; e < QK_K; ++e) {
            const int n = e / 128, j = (e % 128) / 32, l = e % 32;
            b[i].qs[32 * n + l] |= static_cast<uint8_t>(q[e] << (2 * j));
        }
    }
}

// Per super-block the exact int32 sum of x * activation quant, then
// sum = sum + (d_a * d_w) * isum (the K-quants' chain, core/quant/quant_k.cpp).
template <class Block, int (*Value)(const Block&, int)>
float dot_ternary(const void* w, const void* a, int64_t nb) {
    const auto* x = static_cast<const Block*>(w);
    const auto* y = static_cast<const BlockQ8_K*>(a);
    float sum = 0;
    for (int64_t i = 0; i < nb; ++i) {
        int isum = 0;
        for (int e = 0; e < QK_K; ++e) isum += Value(x[i], e) * y[i].qs[e];
        sum = sum + (y[i].d * fp16_to_fp32(x[i].d)) * static_cast<float>(isum);
    }
    return sum;
}
float dot_tq1_0_q8_k(const void* w, const void* a, int64_t nb) { return dot_ternary<BlockTQ1_0, tq1_value>(w, a, nb); }
float dot_tq2_0_q8_k(const void* w, const void* a, int64_t nb) { return dot_ternary<BlockTQ2_0, tq2_value>(w, a, nb); }

}  // namespace ls::qref
