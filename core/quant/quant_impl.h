// Internal per-type entry points of the reference quantization code (core/quant_*.cpp).
#pragma once
#include <cmath>
#include <cstdint>

namespace ls::qref {

// Round to nearest, ties to even (the rounding the SIMD kernels use, so reference and fast
// quantizers agree bit for bit).
inline int rne(float x) { return static_cast<int>(std::nearbyint(x)); }

void dequant_q4_0(const void* src, float* dst, int64_t nb);
void dequant_q4_1(const void* src, float* dst, int64_t nb);
void dequant_q5_0(const void* src, float* dst, int64_t nb);
void dequant_q5_1(const void* src, float* dst, int64_t nb);
void dequant_q8_0(const void* src, float* dst, int64_t nb);
void dequant_q8_1(const void* src, float* dst, int64_t nb);
void dequant_q2_k(const void* src, float* dst, int64_t nb);
void dequant_q3_k(const void* src, float* dst, int64_t nb);
void dequant_q4_k(const void* src, float* dst, int64_t nb);
void dequant_q5_k(const void* src, float* dst, int64_t nb);
void dequant_q6_k(const void* src, float* dst, int64_t nb);
void dequant_q8_k(const void* src, float* dst, int64_t nb);
void dequant_iq4_nl(const void* src, float* dst, int64_t nb);
void dequant_iq4_xs(const void* src, float* dst, int64_t nb);
void dequant_mxfp4(const void* src, float* dst, int64_t nb);
void dequant_tq1_0(const void* src, float* dst, int64_t nb);
void dequant_tq2_0(const void* src, float* dst, int64_t nb);
void dequant_iq2_xxs(const void* src, float* dst, int64_t nb);
void dequant_iq2_xs(const void* src, float* dst, int64_t nb);
void dequant_iq2_s(const void* src, float* dst, int64_t nb);
void dequant_iq3_xxs(const void* src, float* dst, int64_t nb);
void dequant_iq3_s(const void* src, float* dst, int64_t nb);
void dequant_iq1_s(const void* src, float* dst, int64_t nb);
void dequant_iq1_m(const void* src, float* dst, int64_t nb);

void quant_q4_0(const float* src, void* dst, int64_t nb);
void quant_q4_1(const float* src, void* dst, int64_t nb);
void quant_q5_0(const float* src, void* dst, int64_t nb);
void quant_q5_1(const float* src, void* dst, int64_t nb);
void quant_q8_0(const float* src, void* dst, int64_t nb);
void quant_q8_1(const float* src, void* dst, int64_t nb);
void quant_q2_k(const float* src, void* dst, int64_t nb);
void quant_q3_k(const float* src, void* dst, int64_t nb);
void quant_q4_k(const float* src, void* dst, int64_t nb);
void quant_q5_k(const float* src, void* dst, int64_t nb);
void quant_q6_k(const float* src, void* dst, int64_t nb);
void quant_q8_k(const float* src, void* dst, int64_t nb);
void quant_iq4_nl(const float* src, void* dst, int64_t nb);
void quant_iq4_xs(const float* src, void* dst, int64_t nb);
void quant_mxfp4(const float* src, void* dst, int64_t nb);
void quant_tq1_0(const float* src, void* dst, int64_t nb);
void quant_tq2_0(const float* src, void* dst, int64_t nb);

// Dot products with the activation blocks (Q8_0 / Q8_1 / Q8_K), nb blocks.
float dot_q4_0_q8_0(const void* w, const void* a, int64_t nb);
float dot_q4_1_q8_1(const void* w, const void* a, int64_t nb);
float dot_q5_0_q8_0(const void* w, const void* a, int64_t nb);
float dot_q5_1_q8_1(const void* w, const void* a, int64_t nb);
float dot_q8_0_q8_0(const void* w, const void* a, int64_t nb);
float dot_q2_k_q8_k(const void* w, const void* a, int64_t nb);
float dot_q3_k_q8_k(const void* w, const void* a, int64_t nb);
float dot_q4_k_q8_k(const void* w, const void* a, int64_t nb);
float dot_q5_k_q8_k(const void* w, const void* a, int64_t nb);
float dot_q6_k_q8_k(const void* w, const void* a, int64_t nb);
float dot_iq4_nl_q8_0(const void* w, const void* a, int64_t nb);
float dot_mxfp4_q8_0(const void* w, const void* a, int64_t nb);
float dot_iq4_xs_q8_k(const void* w, const void* a, int64_t nb);
float dot_tq1_0_q8_k(const void* w, const void* a, int64_t nb);
float dot_tq2_0_q8_k(const void* w, const void* a, int64_t nb);
float dot_iq2_xxs_q8_k(const void* w, const void* a, int64_t nb);
float dot_iq2_xs_q8_k(const void* w, const void* a, int64_t nb);
float dot_iq2_s_q8_k(const void* w, const void* a, int64_t nb);
float dot_iq3_xxs_q8_k(const void* w, const void* a, int64_t nb);
float dot_iq3_s_q8_k(const void* w, const void* a, int64_t nb);
float dot_iq1_s_q8_k(const void* w, const void* a, int64_t nb);
float dot_iq1_m_q8_k(const void* w, const void* a, int64_t nb);

}  // namespace ls::qref
