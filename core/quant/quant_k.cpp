// Reference (de)quantization and dot products of the 256-element K-quant super-blocks
// Q2_K, Q3_K, Q4_K, Q5_K, Q6_K and the activation type Q8_K.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/quant/block_access.h"
#include "core/quant/quant.h"
#include "core/quant/quant_blocks.h"
#include "core/quant/quant_impl.h"

namespace ls::qref {
using namespace ls::qb;

// ---------------------------------------------------------------- dequantization

void dequant_q2_k(const void* src, float* y, int64_t nb) {
    const auto* b = static_cast<const BlockQ2_K*>(src);
    for (int64_t i = 0; i < nb; ++i, y += QK_K) {
        const float d = fp16_to_fp32(b[i].d), dmin = fp16_to_fp32(b[i].dmin);
        for (int e = 0; e < QK_K; ++e) {
            const float dl = d * static_cast<float>(q2k_scale(b[i].scales, e / 16)),
                        ml = dmin * static_cast<float>(q2k_min(b[i].scales, e / 16));
            y[e] = dl * static_cast<float>(q2k_value(b[i], e)) - ml;
        }
    }
}

void dequant_q3_k(const void* src, float* y, int64_t nb) {
    const auto* b = static_cast<const BlockQ3_K*>(src);
    for (int64_t i = 0; i < nb; ++i, y += QK_K) {
        const float d = fp16_to_fp32(b[i].d);
        for (int e = 0; e < QK_K; ++e) {
            const float dl = d * static_cast<float>(q3k_scale(b[i].scales, e / 16));
            y[e] = dl * static_cast<float>(q3k_value(b[i], e));
        }
    }
}

void dequant_q4_k(const void* src, float* y, int64_t nb) {
    const auto* b = static_cast<const BlockQ4_K*>(src);
    for (int64_t i = 0; i < nb; ++i, y += QK_K) {
        const float d = fp16_to_fp32(b[i].d), dmin = fp16_to_fp32(b[i].dmin);
        for (int e = 0; e < QK_K; ++e) {
            uint8_t sc, m;
            k4_scale_min(b[i].scales, e / 32, sc, m);
            const float dl = d * static_cast<float>(sc), ml = dmin * static_cast<float>(m);
            y[e] = dl * static_cast<float>(q4k_value(b[i].qs, e)) - ml;
        }
    }
}

void dequant_q5_k(const void* src, float* y, int64_t nb) {
    const auto* b = static_cast<const BlockQ5_K*>(src);
    for (int64_t i = 0; i < nb; ++i, y += QK_K) {
        const float d = fp16_to_fp32(b[i].d), dmin = fp16_to_fp32(b[i].dmin);
        for (int e = 0; e < QK_K; ++e) {
            uint8_t sc, m;
            k4_scale_min(b[i].scales, e / 32, sc, m);
            const float dl = d * static_cast<float>(sc), ml = dmin * static_cast<float>(m);
            y[e] = dl * static_cast<float>(q5k_value(b[i], e)) - ml;
        }
    }
}

void dequant_q6_k(const void* src, float* y, int64_t nb) {
    const auto* b = static_cast<const BlockQ6_K*>(src);
    for (int64_t i = 0; i < nb; ++i, y += QK_K) {
        const float d = fp16_to_fp32(b[i].d);
        for (int e = 0; e < QK_K; ++e) {
            const float dl = d * static_cast<float>(b[i].scales[e / 16]);
            y[e] = dl * static_cast<float>(q6k_value(b[i], e));
        }
    }
}

void dequant_q8_k(const void* src, float* y, int64_t nb) {
    const auto* b = static_cast<const BlockQ8_K*>(src);
    for (int64_t i = 0; i < nb; ++i, y += QK_K)
        for (int e = 0; e < QK_K; ++e) y[e] = b[i].d * static_cast<float>(b[i].qs[e]);
}

// ---------------------------------------------------------------- quantization

namespace {
// Fits x ~ a*L - m (L integer in [0, nmax], m >= 0) on a sub-block: tries a few grid
// densities around nmax/(max-min), refits a and m by least squares for each rounding and
// keeps the lowest squared error.
void fit_scale_min(const float* x, int n, int nmax, float& a_out, float& m_out) {
    float mn = 0, mx = x[0];  // the range always includes 0 (m >= 0)
    for (int i = 0; i < n; ++i) { mn = std::min(mn, x[i]); mx = std::max(mx, x[i]); }
    if (mx <= mn) { a_out = 0; m_out = -mn; return; }
    float best_a = (mx - mn) / static_cast<float>(nmax), best_b = mn, best_err = INFINITY;
    for (int t = -10; t <= 10; ++t) {
        const float iscale = (static_cast<float>(nmax) + 0.1f * static_cast<float>(t)) / (mx - mn);
        double sl = 0, sll = 0, sx = 0, slx = 0;
        int L[32];
        for (int i = 0; i < n; ++i) {
            L[i] = std::clamp(rne((x[i] - mn) * iscale), 0, nmax);
            sl += L[i]; sll += static_cast<double>(L[i]) * L[i]; sx += x[i]; slx += L[i] * static_cast<double>(x[i]);
        }
        const double det = n * sll - sl * sl;
        if (det <= 0) continue;
        double a = (n * slx - sl * sx) / det, b = (sll * sx - sl * slx) / det;
        if (b > 0) { b = 0; a = slx / sll; }  // the offset must be a non-negative min
        if (a <= 0) continue;
        double err = 0;
        for (int i = 0; i < n; ++i) { const double r = a * L[i] + b - x[i]; err += r * r; }
        if (err < best_err) { best_err = static_cast<float>(err); best_a = static_cast<float>(a); best_b = static_cast<float>(b); }
    }
    a_out = best_a;
    m_out = -best_b;
}

// Fits x ~ a*L (L integer in [-half, half-1]) on a sub-block: the largest-magnitude value
// maps near -half; a few grid densities, least-squares refit of a, lowest error kept.
float fit_scale_sym(const float* x, int n, int half) {
    float amax = 0, mx = 0;
    for (int i = 0; i < n; ++i)
        if (std::fabs(x[i]) > amax) { amax = std::fabs(x[i]); mx = x[i]; }
    if (amax == 0) return 0;
    float best_a = mx / static_cast<float>(-half), best_err = INFINITY;
    for (int t = -8; t <= 8; ++t) {
        const float iscale = -(static_cast<float>(half) + 0.1f * static_cast<float>(t)) / mx;
        double sll = 0, slx = 0;
        int L[32];
        for (int i = 0; i < n; ++i) {
            L[i] = std::clamp(rne(x[i] * iscale), -half, half - 1);
            sll += static_cast<double>(L[i]) * L[i]; slx += L[i] * static_cast<double>(x[i]);
        }
        if (sll <= 0) continue;
        const double a = slx / sll;
        double err = 0;
        for (int i = 0; i < n; ++i) { const double r = a * L[i] - x[i]; err += r * r; }
        if (err < best_err) { best_err = static_cast<float>(err); best_a = static_cast<float>(a); }
    }
    return best_a;
}

// Quantizes non-negative sub-block scales to `bits`-bit integers with one f16 super scale.
void quant_scales_unsigned(const float* s, int n, int maxq, uint16_t& dh, int* q) {
    float mx = 0;
    for (int i = 0; i < n; ++i) mx = std::max(mx, s[i]);
    const float d = mx / static_cast<float>(maxq);
    const float id = d > 0 ? 1.0f / d : 0.0f;
    dh = fp32_to_fp16(d);
    for (int i = 0; i < n; ++i) q[i] = std::clamp(rne(s[i] * id), 0, maxq);
}
// Signed sub-block scales: the largest-magnitude one maps to -lo (range [-lo, lo-1]).
float quant_scales_signed(const float* s, int n, int lo, int* q) {
    float amax = 0, mx = 0;
    for (int i = 0; i < n; ++i)
        if (std::fabs(s[i]) > amax) { amax = std::fabs(s[i]); mx = s[i]; }
    if (amax == 0) { for (int i = 0; i < n; ++i) q[i] = 0; return 0; }
    const float iscale = static_cast<float>(-lo) / mx;
    for (int i = 0; i < n; ++i) q[i] = std::clamp(rne(s[i] * iscale), -lo, lo - 1);
    return 1.0f / iscale;
}

// Final integer levels for x ~ dl*L - ml.
int level_asym(float x, float dl, float ml, int nmax) {
    return dl > 0 ? std::clamp(rne((x + ml) / dl), 0, nmax) : 0;
}
int level_sym(float x, float dl, int half) {
    return dl != 0 ? std::clamp(rne(x / dl), -half, half - 1) : 0;
}
}  // namespace

void quant_q2_k(const float* x, void* dst, int64_t nb) {
    auto* b = static_cast<BlockQ2_K*>(dst);
    for (int64_t i = 0; i < nb; ++i, x += QK_K) {
        float sc[16], mn[16];
        for (int s = 0; s < 16; ++s) fit_scale_min(x + 16 * s, 16, 3, sc[s], mn[s]);
        int qs[16], qm[16];
        quant_scales_unsigned(sc, 16, 15, b[i].d, qs);
        quant_scales_unsigned(mn, 16, 15, b[i].dmin, qm);
        for (int s = 0; s < 16; ++s) b[i].scales[s] = static_cast<uint8_t>(qs[s] | (qm[s] << 4));
        const float d = fp16_to_fp32(b[i].d), dmin = fp16_to_fp32(b[i].dmin);
        std::memset(b[i].qs, 0, sizeof b[i].qs);
        for (int e = 0; e < QK_K; ++e) {
            const int s = e / 16;
            const int L = level_asym(x[e], d * static_cast<float>(qs[s]), dmin * static_cast<float>(qm[s]), 3);
            const int n = e / 128, j = (e % 128) / 32, l = e % 32;
            b[i].qs[32 * n + l] |= static_cast<uint8_t>(L << (2 * j));
        }
    }
}

void quant_q3_k(const float* x, void* dst, int64_t nb) {
    auto* b = static_cast<BlockQ3_K*>(dst);
    for (int64_t i = 0; i < nb; ++i, x += QK_K) {
        float sc[16];
        for (int s = 0; s < 16; ++s) sc[s] = fit_scale_sym(x + 16 * s, 16, 4);
        int q[16];
        const float d = quant_scales_signed(sc, 16, 32, q);
        b[i].d = fp32_to_fp16(d);
        std::memset(b[i].scales, 0, sizeof b[i].scales);
        for (int s = 0; s < 16; ++s) {
            const int v = q[s] + 32;  // 6 bits
            if (s < 8) b[i].scales[s] |= static_cast<uint8_t>(v & 0x0F);
            else b[i].scales[s - 8] |= static_cast<uint8_t>((v & 0x0F) << 4);
            b[i].scales[8 + (s & 3)] |= static_cast<uint8_t>((v >> 4) << (2 * (s >> 2)));
        }
        const float dd = fp16_to_fp32(b[i].d);
        std::memset(b[i].qs, 0, sizeof b[i].qs);
        std::memset(b[i].hmask, 0, sizeof b[i].hmask);
        for (int e = 0; e < QK_K; ++e) {
            const int L = level_sym(x[e], dd * static_cast<float>(q3k_scale(b[i].scales, e / 16)), 4) + 4;
            const int n = e / 128, j = (e % 128) / 32, l = e % 32;
            b[i].qs[32 * n + l] |= static_cast<uint8_t>((L & 3) << (2 * j));
            b[i].hmask[l] |= static_cast<uint8_t>((L >> 2) << (4 * n + j));
        }
    }
}

namespace {
// Shared by Q4_K (nmax 15) and Q5_K (nmax 31): fits and packs the scales; returns the levels.
template <typename Block>
void quant_k4_common(const float* x, Block& b, int nmax, int (&L)[QK_K]) {
    float sc[8], mn[8];
    for (int s = 0; s < 8; ++s) fit_scale_min(x + 32 * s, 32, nmax, sc[s], mn[s]);
    int ls[8], lm[8];
    quant_scales_unsigned(sc, 8, 63, b.d, ls);
    quant_scales_unsigned(mn, 8, 63, b.dmin, lm);
    for (int j = 0; j < 4; ++j) {
        b.scales[j] = static_cast<uint8_t>((ls[j] & 63) | ((ls[j + 4] >> 4) << 6));
        b.scales[j + 4] = static_cast<uint8_t>((lm[j] & 63) | ((lm[j + 4] >> 4) << 6));
        b.scales[j + 8] = static_cast<uint8_t>((ls[j + 4] & 0x0F) | ((lm[j + 4] & 0x0F) << 4));
    }
    const float d = fp16_to_fp32(b.d), dmin = fp16_to_fp32(b.dmin);
    for (int e = 0; e < QK_K; ++e) {
        const int s = e / 32;
        L[e] = level_asym(x[e], d * static_cast<float>(ls[s]), dmin * static_cast<float>(lm[s]), nmax);
    }
}
}  // namespace

void quant_q4_k(const float* x, void* dst, int64_t nb) {
    auto* b = static_cast<BlockQ4_K*>(dst);
    for (int64_t i = 0; i < nb; ++i, x += QK_K) {
        int L[QK_K];
        quant_k4_common(x, b[i], 15, L);
        for (int c = 0; c < 4; ++c)
            for (int l = 0; l < 32; ++l)
                b[i].qs[32 * c + l] = static_cast<uint8_t>(L[64 * c + l] | (L[64 * c + 32 + l] << 4));
    }
}

void quant_q5_k(const float* x, void* dst, int64_t nb) {
    auto* b = static_cast<BlockQ5_K*>(dst);
    for (int64_t i = 0; i < nb; ++i, x += QK_K) {
        int L[QK_K];
        quant_k4_common(x, b[i], 31, L);
        std::memset(b[i].qh, 0, sizeof b[i].qh);
        for (int c = 0; c < 4; ++c)
            for (int l = 0; l < 32; ++l)
                b[i].qs[32 * c + l] = static_cast<uint8_t>((L[64 * c + l] & 0x0F) | ((L[64 * c + 32 + l] & 0x0F) << 4));
        for (int e = 0; e < QK_K; ++e) b[i].qh[e % 32] |= static_cast<uint8_t>((L[e] >> 4) << (e / 32));
    }
}

void quant_q6_k(const float* x, void* dst, int64_t nb) {
    auto* b = static_cast<BlockQ6_K*>(dst);
    for (int64_t i = 0; i < nb; ++i, x += QK_K) {
        float sc[16];
        for (int s = 0; s < 16; ++s) sc[s] = fit_scale_sym(x + 16 * s, 16, 32);
        int q[16];
        const float d = quant_scales_signed(sc, 16, 128, q);
        b[i].d = fp32_to_fp16(d);
        for (int s = 0; s < 16; ++s) b[i].scales[s] = static_cast<int8_t>(q[s]);
        const float dd = fp16_to_fp32(b[i].d);
        std::memset(b[i].ql, 0, sizeof b[i].ql);
        std::memset(b[i].qh, 0, sizeof b[i].qh);
        for (int e = 0; e < QK_K; ++e) {
            const int L = level_sym(x[e], dd * static_cast<float>(q[e / 16]), 32) + 32;
            const int n = e / 128, k = (e % 128) / 32, l = e % 32;
            b[i].ql[64 * n + 32 * (k % 2) + l] |= static_cast<uint8_t>((L & 0x0F) << (4 * (k / 2)));
            b[i].qh[32 * n + l] |= static_cast<uint8_t>((L >> 4) << (2 * k));
        }
    }
}

// Q8_K (activations): d = 1/iscale with iscale = 127/amax, q = rne(x*iscale) in [-127, 127];
// cpu::quantize_row_act must match bit for bit.
void quant_q8_k(const float* x, void* dst, int64_t nb) {
    auto* b = static_cast<BlockQ8_K*>(dst);
    for (int64_t i = 0; i < nb; ++i, x += QK_K) {
        float amax = 0;
        for (int e = 0; e < QK_K; ++e) amax = std::max(amax, std::fabs(x[e]));
        if (amax == 0) {
            std::memset(&b[i], 0, sizeof b[i]);
            continue;
        }
        const float iscale = 127.0f / amax;
        b[i].d = 1.0f / iscale;
        for (int e = 0; e < QK_K; ++e) b[i].qs[e] = static_cast<int8_t>(rne(x[e] * iscale));
        for (int g = 0; g < 16; ++g) {
            int s = 0;
            for (int l = 0; l < 16; ++l) s += b[i].qs[16 * g + l];
            b[i].bsums[g] = static_cast<int16_t>(s);
        }
    }
}

// ---------------------------------------------------------------- dot products
// Per super-block: exact int32 sums (scale-weighted), then
// sum = sum + (dy*d) * isum and msum_f = msum_f + (dy*dmin) * msum over super-blocks in
// order, result sum - msum_f: the canonical float sequence of mul_mat (core/ref/mul_mat.cpp).

float dot_q2_k_q8_k(const void* w, const void* a, int64_t nb) {
    const auto* x = static_cast<const BlockQ2_K*>(w);
    const auto* y = static_cast<const BlockQ8_K*>(a);
    float sum = 0, msum_f = 0;
    for (int64_t i = 0; i < nb; ++i) {
        int isum = 0, msum = 0;
        for (int s = 0; s < 16; ++s) {
            int si = 0;
            for (int t = 0; t < 16; ++t) si += q2k_value(x[i], 16 * s + t) * y[i].qs[16 * s + t];
            isum += q2k_scale(x[i].scales, s) * si;
            msum += q2k_min(x[i].scales, s) * y[i].bsums[s];
        }
        sum = sum + (y[i].d * fp16_to_fp32(x[i].d)) * static_cast<float>(isum);
        msum_f = msum_f + (y[i].d * fp16_to_fp32(x[i].dmin)) * static_cast<float>(msum);
    }
    return sum - msum_f;
}

float dot_q3_k_q8_k(const void* w, const void* a, int64_t nb) {
    const auto* x = static_cast<const BlockQ3_K*>(w);
    const auto* y = static_cast<const BlockQ8_K*>(a);
    float sum = 0;
    for (int64_t i = 0; i < nb; ++i) {
        int isum = 0;
        for (int s = 0; s < 16; ++s) {
            int si = 0;
            for (int t = 0; t < 16; ++t) si += q3k_value(x[i], 16 * s + t) * y[i].qs[16 * s + t];
            isum += q3k_scale(x[i].scales, s) * si;
        }
        sum = sum + (y[i].d * fp16_to_fp32(x[i].d)) * static_cast<float>(isum);
    }
    return sum;
}

float dot_q4_k_q8_k(const void* w, const void* a, int64_t nb) {
    const auto* x = static_cast<const BlockQ4_K*>(w);
    const auto* y = static_cast<const BlockQ8_K*>(a);
    float sum = 0, msum_f = 0;
    for (int64_t i = 0; i < nb; ++i) {
        int isum = 0, msum = 0;
        for (int s = 0; s < 8; ++s) {
            uint8_t sc, m;
            k4_scale_min(x[i].scales, s, sc, m);
            int si = 0;
            for (int t = 0; t < 32; ++t) si += q4k_value(x[i].qs, 32 * s + t) * y[i].qs[32 * s + t];
            isum += sc * si;
            msum += m * (y[i].bsums[2 * s] + y[i].bsums[2 * s + 1]);
        }
        sum = sum + (y[i].d * fp16_to_fp32(x[i].d)) * static_cast<float>(isum);
        msum_f = msum_f + (y[i].d * fp16_to_fp32(x[i].dmin)) * static_cast<float>(msum);
    }
    return sum - msum_f;
}

float dot_q5_k_q8_k(const void* w, const void* a, int64_t nb) {
    const auto* x = static_cast<const BlockQ5_K*>(w);
    const auto* y = static_cast<const BlockQ8_K*>(a);
    float sum = 0, msum_f = 0;
    for (int64_t i = 0; i < nb; ++i) {
        int isum = 0, msum = 0;
        for (int s = 0; s < 8; ++s) {
            uint8_t sc, m;
            k4_scale_min(x[i].scales, s, sc, m);
            int si = 0;
            for (int t = 0; t < 32; ++t) si += q5k_value(x[i], 32 * s + t) * y[i].qs[32 * s + t];
            isum += sc * si;
            msum += m * (y[i].bsums[2 * s] + y[i].bsums[2 * s + 1]);
        }
        sum = sum + (y[i].d * fp16_to_fp32(x[i].d)) * static_cast<float>(isum);
        msum_f = msum_f + (y[i].d * fp16_to_fp32(x[i].dmin)) * static_cast<float>(msum);
    }
    return sum - msum_f;
}

float dot_q6_k_q8_k(const void* w, const void* a, int64_t nb) {
    const auto* x = static_cast<const BlockQ6_K*>(w);
    const auto* y = static_cast<const BlockQ8_K*>(a);
    float sum = 0;
    for (int64_t i = 0; i < nb; ++i) {
        int isum = 0;
        for (int s = 0; s < 16; ++s) {
            int si = 0;
            for (int t = 0; t < 16; ++t) si += q6k_value(x[i], 16 * s + t) * y[i].qs[16 * s + t];
            isum += x[i].scales[s] * si;
        }
        sum = sum + (y[i].d * fp16_to_fp32(x[i].d)) * static_cast<float>(isum);
    }
    return sum;
}

}  // namespace ls::qref
