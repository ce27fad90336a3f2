// Reference dequantization and dot products of the grid i-quants IQ2_XXS, IQ2_XS, IQ2_S,
// IQ3_XXS, IQ3_S, IQ1_S and IQ1_M (256-element super-blocks over Q8_K activations; element
// layouts in core/quant/iq_access.h). Dequantization multiplies in the order of the gguf
// Python package (bit for bit, tests/data/quant_vectors.bin); the dot product is the exact
// int32 sum of ls * v * y per super-block, sum = sum + (d_a * d_w) * isum in block order,
// then one multiplication by 1/den (a power of two: exact short of underflow).
#include <cstring>
#include <type_traits>

#include "core/quant/iq_access.h"
#include "core/quant/quant.h"
#include "core/quant/quant_impl.h"

namespace ls::qref {
using namespace ls::qb;

namespace {
template <class B> float block_d(const B& b) { return fp16_to_fp32(b.d); }
template <> float block_d(const BlockIQ1_M& b) { return fp16_to_fp32(iq1m_d(b)); }

// The sub-block's float scale and an element's value, in the gguf package's operation order:
// IQ2 d * (0.5 + s) * 0.25 and IQ3_XXS d * (0.5 + s) * 0.5 with s = (ls - 1) / 2, IQ3_S and
// IQ1 d * ls; then db * v (IQ1: dl * (v / 8), the grid value plus its delta, exact).
template <class B> float sub_scale(float d, int ls) {
    const float half = 0.5f + static_cast<float>((ls - 1) / 2);
    if constexpr (kIqDen<B> == 8 && !std::is_same_v<B, BlockIQ1_S> && !std::is_same_v<B, BlockIQ1_M>) return d * half * 0.25f;
    else if constexpr (kIqDen<B> == 4) return d * half * 0.5f;
    else return d * static_cast<float>(ls);
}
template <class B> float element(float db, int v) {
    if constexpr (std::is_same_v<B, BlockIQ1_S> || std::is_same_v<B, BlockIQ1_M>) return db * (static_cast<float>(v) * 0.125f);
    else return db * static_cast<float>(v);
}

template <class B>
void dequant(const void* src, float* y, int64_t nb) {
    const auto* b = static_cast<const B*>(src);
    for (int64_t i = 0; i < nb; ++i, y += QK_K) {
        const float d = block_d(b[i]);
        for (int s = 0; s < QK_K / kIqSub<B>; ++s) {
            const float db = sub_scale<B>(d, iq_scale(b[i], s));
            for (int t = 0; t < kIqSub<B>; ++t) {
                const int e = s * kIqSub<B> + t;
                y[e] = element<B>(db, iq_value(b[i], e));
            }
        }
    }
}

template <class B>
float dot(const void* w, const void* a, int64_t nb) {
    const auto* x = static_cast<const B*>(w);
    const auto* y = static_cast<const BlockQ8_K*>(a);
    float sum = 0;
    for (int64_t i = 0; i < nb; ++i) {
        int isum = 0;
        for (int s = 0; s < QK_K / kIqSub<B>; ++s) {
            int si = 0;
            for (int t = 0; t < kIqSub<B>; ++t) {
                const int e = s * kIqSub<B> + t;
                si += iq_value(x[i], e) * y[i].qs[e];
            }
            isum += iq_scale(x[i], s) * si;
        }
        sum = sum + (y[i].d * block_d(x[i])) * static_cast<float>(isum);
    }
    return kIqDen<B> == 1 ? sum : sum * (1.0f / static_cast<float>(kIqDen<B>));
}
}  // namespace

void dequant_iq2_xxs(const void* s, float* y, int64_t nb) { dequant<BlockIQ2_XXS>(s, y, nb); }
void dequant_iq2_xs(const void* s, float* y, int64_t nb) { dequant<BlockIQ2_XS>(s, y, nb); }
void dequant_iq2_s(const void* s, float* y, int64_t nb) { dequant<BlockIQ2_S>(s, y, nb); }
void dequant_iq3_xxs(const void* s, float* y, int64_t nb) { dequant<BlockIQ3_XXS>(s, y, nb); }
void dequant_iq3_s(const void* s, float* y, int64_t nb) { dequant<BlockIQ3_S>(s, y, nb); }
void dequant_iq1_s(const void* s, float* y, int64_t nb) { dequant<BlockIQ1_S>(s, y, nb); }
void dequant_iq1_m(const void* s, float* y, int64_t nb) { dequant<BlockIQ1_M>(s, y, nb); }

float dot_iq2_xxs_q8_k(const void* w, const void* a, int64_t nb) { return dot<BlockIQ2_XXS>(w, a, nb); }
float dot_iq2_xs_q8_k(const void* w, const void* a, int64_t nb) { return dot<BlockIQ2_XS>(w, a, nb); }
float dot_iq2_s_q8_k(const void* w, const void* a, int64_t nb) { return dot<BlockIQ2_S>(w, a, nb); }
float dot_iq3_xxs_q8_k(const void* w, const void* a, int64_t nb) { return dot<BlockIQ3_XXS>(w, a, nb); }
float dot_iq3_s_q8_k(const void* w, const void* a, int64_t nb) { return dot<BlockIQ3_S>(w, a, nb); }
float dot_iq1_s_q8_k(const void* w, const void* a, int64_t nb) { return dot<BlockIQ1_S>(w, a, nb); }
float dot_iq1_m_q8_k(const void* w, const void* a, int64_t nb) { return dot<BlockIQ1_M>(w, a, nb); }

}  // namespace ls::qref
