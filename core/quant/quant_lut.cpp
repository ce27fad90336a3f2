// Reference (de)quantization and dot products of the lookup-table types: IQ4_NL and IQ4_XS
// (a 4-bit index into 16 non-uniform int8 levels, times a scale) and MXFP4 (E2M1 levels
// doubled, times a power of two). The levels are integers, so a block's dot product with its
// activation block is an exact int32 sum, then the canonical float chain.
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
float bits_float(uint32_t u) { float f; std::memcpy(&f, &u, 4); return f; }

// The level index (0..15) nearest to v among level(0..15); the first on a tie.
template <class Level>
int nearest(float v, Level level) {
    int best = 0;
    float err = INFINITY;
    for (int i = 0; i < 16; ++i) {
        const float e = std::fabs(v - static_cast<float>(level(i)));
        if (e < err) { err = e; best = i; }
    }
    return best;
}

// Fits x ~ d * iq4nl_level(idx) over n elements: start from the largest-magnitude element at
// level -127, pick the nearest levels, refit d by least squares (twice). Returns d; idx filled.
float fit_iq4(const float* x, int n, int* idx) {
    float amax = 0, mx = 0;
    for (int i = 0; i < n; ++i)
        if (std::fabs(x[i]) > amax) { amax = std::fabs(x[i]); mx = x[i]; }
    if (amax == 0) { for (int i = 0; i < n; ++i) idx[i] = 8; return 0; }  // level 1 times 0
    float d = mx / -127.0f;
    for (int it = 0; it < 2; ++it) {
        double sll = 0, slx = 0;
        for (int i = 0; i < n; ++i) {
            idx[i] = nearest(x[i] / d, iq4nl_level);
            const double l = iq4nl_level(idx[i]);
            sll += l * l; slx += l * x[i];
        }
        if (sll > 0 && slx != 0) d = static_cast<float>(slx / sll);
    }
    return d;
}
}  // namespace

// ---------------------------------------------------------------- dequantization

void dequant_iq4_nl(const void* src, float* y, int64_t nb) {
    const auto* b = static_cast<const BlockIQ4_NL*>(src);
    for (int64_t i = 0; i < nb; ++i, y += QK) {
        const float d = fp16_to_fp32(b[i].d);
        for (int j = 0; j < QK; ++j) y[j] = d * static_cast<float>(iq4nl_level(nibble(b[i].qs, j)));
    }
}

void dequant_iq4_xs(const void* src, float* y, int64_t nb) {
    const auto* b = static_cast<const BlockIQ4_XS*>(src);
    for (int64_t i = 0; i < nb; ++i, y += QK_K) {
        const float d = fp16_to_fp32(b[i].d);
        for (int e = 0; e < QK_K; ++e) {
            const float dl = d * static_cast<float>(iq4xs_scale(b[i], e / 32));
            y[e] = dl * static_cast<float>(iq4xs_value(b[i], e));
        }
    }
}

void dequant_mxfp4(const void* src, float* y, int64_t nb) {
    const auto* b = static_cast<const BlockMXFP4*>(src);
    for (int64_t i = 0; i < nb; ++i, y += QK) {
        const float d = bits_float(mxfp4_scale_bits(b[i].e));
        for (int j = 0; j < QK; ++j) y[j] = d * static_cast<float>(mxfp4_level(nibble(b[i].qs, j)));
    }
}

// ---------------------------------------------------------------- quantization

void quant_iq4_nl(const float* x, void* dst, int64_t nb) {
    auto* b = static_cast<BlockIQ4_NL*>(dst);
    for (int64_t i = 0; i < nb; ++i, x += QK) {
        int idx[QK];
        b[i].d = fp32_to_fp16(fit_iq4(x, QK, idx));
        const float d = fp16_to_fp32(b[i].d);
        for (int j = 0; j < QK; ++j) idx[j] = d != 0 ? nearest(x[j] / d, iq4nl_level) : 8;
        for (int j = 0; j < QK / 2; ++j) b[i].qs[j] = static_cast<uint8_t>(idx[j] | (idx[j + 16] << 4));
    }
}

void quant_iq4_xs(const float* x, void* dst, int64_t nb) {
    auto* b = static_cast<BlockIQ4_XS*>(dst);
    for (int64_t i = 0; i < nb; ++i, x += QK_K) {
        float ds[8];
        int idx[QK_K];
        float amax = 0, mx = 0;
        for (int s = 0; s < 8; ++s) {
            ds[s] = fit_iq4(x + 32 * s, 32, idx + 32 * s);
            if (std::fabs(ds[s]) > amax) { amax = std::fabs(ds[s]); mx = ds[s]; }
        }
        // Sub-block scales as 6-bit signed integers: the largest-magnitude one maps to -32.
        const float d = amax > 0 ? mx / -32.0f : 0.0f;
        b[i].d = fp32_to_fp16(d);
        const float dd = fp16_to_fp32(b[i].d);
        b[i].scales_h = 0;
        std::memset(b[i].scales_l, 0, sizeof b[i].scales_l);
        for (int s = 0; s < 8; ++s) {
            const int ls = dd != 0 ? std::clamp(rne(ds[s] / dd), -32, 31) : 0;
            const int u = ls + 32;
            b[i].scales_l[s / 2] |= static_cast<uint8_t>((u & 0x0F) << (4 * (s % 2)));
            b[i].scales_h = static_cast<uint16_t>(b[i].scales_h | ((u >> 4) << (2 * s)));
            const float dl = dd * static_cast<float>(ls);
            for (int t = 0; t < 32; ++t) idx[32 * s + t] = dl != 0 ? nearest(x[32 * s + t] / dl, iq4nl_level) : 8;
        }
        for (int s = 0; s < 8; ++s)
            for (int t = 0; t < 16; ++t)
                b[i].qs[16 * s + t] = static_cast<uint8_t>(idx[32 * s + t] | (idx[32 * s + t + 16] << 4));
    }
}

// The shared exponent as the gguf package and llama.cpp choose it: floor(log2(amax)) - 2 + 127
// (the largest level, 12 = 6 doubled, then covers amax), clamped to E8M0's range.
void quant_mxfp4(const float* x, void* dst, int64_t nb) {
    auto* b = static_cast<BlockMXFP4*>(dst);
    for (int64_t i = 0; i < nb; ++i, x += QK) {
        float amax = 0;
        for (int j = 0; j < QK; ++j) amax = std::max(amax, std::fabs(x[j]));
        int e = 0;
        if (amax > 0) e = std::clamp(static_cast<int>(std::floor(std::log2(amax))) - 2 + 127, 0, 254);
        b[i].e = static_cast<uint8_t>(e);
        const float d = bits_float(mxfp4_scale_bits(b[i].e));
        int idx[QK];
        for (int j = 0; j < QK; ++j) idx[j] = nearest(x[j] / d, mxfp4_level);
        for (int j = 0; j < QK / 2; ++j) b[i].qs[j] = static_cast<uint8_t>(idx[j] | (idx[j + 16] << 4));
    }
}

// ---------------------------------------------------------------- dot products
// Per block: the exact int32 sum of level * activation quant, then
// sum = sum + (d_w * d_a) * isum in block order (core/ref/mul_mat.cpp's canonical chain).

float dot_iq4_nl_q8_0(const void* w, const void* a, int64_t nb) {
    const auto* x = static_cast<const BlockIQ4_NL*>(w);
    const auto* y = static_cast<const BlockQ8_0*>(a);
    float sum = 0;
    for (int64_t i = 0; i < nb; ++i) {
        int isum = 0;
        for (int j = 0; j < QK; ++j) isum += iq4nl_level(nibble(x[i].qs, j)) * y[i].qs[j];
        sum = sum + (fp16_to_fp32(x[i].d) * fp16_to_fp32(y[i].d)) * static_cast<float>(isum);
    }
    return sum;
}

float dot_mxfp4_q8_0(const void* w, const void* a, int64_t nb) {
    const auto* x = static_cast<const BlockMXFP4*>(w);
    const auto* y = static_cast<const BlockQ8_0*>(a);
    float sum = 0;
    for (int64_t i = 0; i < nb; ++i) {
        int isum = 0;
        for (int j = 0; j < QK; ++j) isum += mxfp4_level(nibble(x[i].qs, j)) * y[i].qs[j];
        sum = sum + (bits_float(mxfp4_scale_bits(x[i].e)) * fp16_to_fp32(y[i].d)) * static_cast<float>(isum);
    }
    return sum;
}

float dot_iq4_xs_q8_k(const void* w, const void* a, int64_t nb) {
    const auto* x = static_cast<const BlockIQ4_XS*>(w);
    const auto* y = static_cast<const BlockQ8_K*>(a);
    float sum = 0;
    for (int64_t i = 0; i < nb; ++i) {
        int isum = 0;
        for (int s = 0; s < 8; ++s) {
            int si = 0;
            for (int t = 0; t < 32; ++t) si += iq4xs_value(x[i], 32 * s + t) * y[i].qs[32 * s + t];
            isum += iq4xs_scale(x[i], s) * si;
        }
        sum = sum + (y[i].d * fp16_to_fp32(x[i].d)) * static_cast<float>(isum);
    }
    return sum;
}

}  // namespace ls::qref
