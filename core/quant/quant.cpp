// fp16/bf16 conversions and the per-type dispatch of the reference quantization code.
#include "core/quant/quant.h"

#include <cstring>
#include <stdexcept>
#include <string>

#include "core/quant/quant_impl.h"
#include "core/rules/canon.h"

namespace ls {

namespace {
uint32_t f2u(float f) { uint32_t u; std::memcpy(&u, &f, 4); return u; }
float u2f(uint32_t u) { float f; std::memcpy(&f, &u, 4); return f; }

[[noreturn]] void unsupported(const char* what, DType t) {
    throw std::runtime_error(std::string(what) + ": type " + dtype_name(t) + " is not supported");
}
}  // namespace

float fp16_to_fp32(uint16_t h) {
    const uint32_t sign = static_cast<uint32_t>(h & 0x8000) << 16;
    const uint32_t exp = (h >> 10) & 0x1F;
    const uint32_t mant = h & 0x3FF;
    if (exp == 0) {
        // Zero or subnormal: mant * 2^-24, exact in float.
        float v = static_cast<float>(mant) * 5.9604644775390625e-8f;
        return u2f(f2u(v) | sign);
    }
    if (exp == 31) return u2f(sign | 0x7F800000u | (mant << 13));
    return u2f(sign | ((exp + 112) << 23) | (mant << 13));
}

uint16_t fp32_to_fp16(float f) {
    const uint32_t x = f2u(f);
    const uint16_t sign = static_cast<uint16_t>((x >> 16) & 0x8000);
    const uint32_t ax = x & 0x7FFFFFFFu;
    if (ax >= 0x7F800000u) {  // inf, or NaN (quieted, top payload bits kept)
        if (ax == 0x7F800000u) return sign | 0x7C00;
        return static_cast<uint16_t>(sign | 0x7E00 | ((ax >> 13) & 0x3FF));
    }
    if (ax >= 0x477FF000u) return sign | 0x7C00;  // >= 65520 rounds to infinity
    if (ax < 0x38800000u) {                       // below 2^-14: half subnormal or zero
        if (ax < 0x33000000u) return sign;        // <= 2^-25 rounds to zero
        const uint32_t e = ax >> 23;
        const uint32_t m = (ax & 0x7FFFFFu) | 0x800000u;
        const uint32_t shift = 126 - e;  // value in units of 2^-24 is m >> shift
        uint32_t r = m >> shift;
        const uint32_t rem = m & ((1u << shift) - 1);
        const uint32_t half = 1u << (shift - 1);
        if (rem > half || (rem == half && (r & 1))) ++r;
        return static_cast<uint16_t>(sign | r);
    }
    uint32_t h = (((ax >> 23) - 112) << 10) | ((ax >> 13) & 0x3FF);
    const uint32_t rem = ax & 0x1FFF;
    if (rem > 0x1000 || (rem == 0x1000 && (h & 1))) ++h;  // carry may bump the exponent: fine
    return static_cast<uint16_t>(sign | h);
}

float bf16_to_fp32(uint16_t h) { return u2f(static_cast<uint32_t>(h) << 16); }

uint16_t fp32_to_bf16(float f) {
    const uint32_t x = f2u(f);
    if ((x & 0x7FFFFFFFu) > 0x7F800000u) return static_cast<uint16_t>((x >> 16) | 0x40);  // quiet NaN
    return static_cast<uint16_t>((x + 0x7FFFu + ((x >> 16) & 1)) >> 16);
}

bool can_dequantize(DType t) {
    switch (t) {
        case DType::F32: case DType::F16: case DType::BF16:
        case DType::Q4_0: case DType::Q4_1: case DType::Q5_0: case DType::Q5_1:
        case DType::Q8_0: case DType::Q8_1: case DType::Q2_K: case DType::Q3_K:
        case DType::Q4_K: case DType::Q5_K: case DType::Q6_K: case DType::Q8_K:
        case DType::IQ4_NL: case DType::IQ4_XS: case DType::MXFP4: case DType::TQ1_0: case DType::TQ2_0:
            return true;
        default:
            return is_grid_iq(t);
    }
}

// The grid i-quants have no quantizer here: a useful one searches the codebook with an
// importance matrix (llama.cpp's llama-quantize --imatrix); lockstep runs such files.
bool can_quantize(DType t) { return can_dequantize(t) && !is_grid_iq(t); }

void dequantize_row(DType t, const void* src, float* dst, int64_t n) {
    const int64_t nb = static_cast<int64_t>(row_bytes(t, n) / traits(t).block_bytes);
    switch (t) {
        case DType::F32: std::memcpy(dst, src, static_cast<size_t>(n) * 4); return;
        case DType::F16: {
            const auto* s = static_cast<const uint8_t*>(src);
            for (int64_t i = 0; i < n; ++i) {
                uint16_t h; std::memcpy(&h, s + 2 * i, 2);
                dst[i] = fp16_to_fp32(h);
            }
            return;
        }
        case DType::BF16: {
            const auto* s = static_cast<const uint8_t*>(src);
            for (int64_t i = 0; i < n; ++i) {
                uint16_t h; std::memcpy(&h, s + 2 * i, 2);
                dst[i] = bf16_to_fp32(h);
            }
            return;
        }
        case DType::Q4_0: return qref::dequant_q4_0(src, dst, nb);
        case DType::Q4_1: return qref::dequant_q4_1(src, dst, nb);
        case DType::Q5_0: return qref::dequant_q5_0(src, dst, nb);
        case DType::Q5_1: return qref::dequant_q5_1(src, dst, nb);
        case DType::Q8_0: return qref::dequant_q8_0(src, dst, nb);
        case DType::Q8_1: return qref::dequant_q8_1(src, dst, nb);
        case DType::Q2_K: return qref::dequant_q2_k(src, dst, nb);
        case DType::Q3_K: return qref::dequant_q3_k(src, dst, nb);
        case DType::Q4_K: return qref::dequant_q4_k(src, dst, nb);
        case DType::Q5_K: return qref::dequant_q5_k(src, dst, nb);
        case DType::Q6_K: return qref::dequant_q6_k(src, dst, nb);
        case DType::Q8_K: return qref::dequant_q8_k(src, dst, nb);
        case DType::IQ4_NL: return qref::dequant_iq4_nl(src, dst, nb);
        case DType::IQ4_XS: return qref::dequant_iq4_xs(src, dst, nb);
        case DType::MXFP4: return qref::dequant_mxfp4(src, dst, nb);
        case DType::TQ1_0: return qref::dequant_tq1_0(src, dst, nb);
        case DType::TQ2_0: return qref::dequant_tq2_0(src, dst, nb);
        case DType::IQ2_XXS: return qref::dequant_iq2_xxs(src, dst, nb);
        case DType::IQ2_XS: return qref::dequant_iq2_xs(src, dst, nb);
        case DType::IQ2_S: return qref::dequant_iq2_s(src, dst, nb);
        case DType::IQ3_XXS: return qref::dequant_iq3_xxs(src, dst, nb);
        case DType::IQ3_S: return qref::dequant_iq3_s(src, dst, nb);
        case DType::IQ1_S: return qref::dequant_iq1_s(src, dst, nb);
        case DType::IQ1_M: return qref::dequant_iq1_m(src, dst, nb);
        default: unsupported("dequantize_row", t);
    }
}

void quantize_row(DType t, const float* src, void* dst, int64_t n) {
    const int64_t nb = static_cast<int64_t>(row_bytes(t, n) / traits(t).block_bytes);
    switch (t) {
        case DType::F32: std::memcpy(dst, src, static_cast<size_t>(n) * 4); return;
        case DType::F16: {
            auto* d = static_cast<uint8_t*>(dst);
            for (int64_t i = 0; i < n; ++i) {
                const uint16_t h = fp32_to_fp16(src[i]);
                std::memcpy(d + 2 * i, &h, 2);
            }
            return;
        }
        case DType::BF16: {
            auto* d = static_cast<uint8_t*>(dst);
            for (int64_t i = 0; i < n; ++i) {
                const uint16_t h = fp32_to_bf16(src[i]);
                std::memcpy(d + 2 * i, &h, 2);
            }
            return;
        }
        case DType::Q4_0: return qref::quant_q4_0(src, dst, nb);
        case DType::Q4_1: return qref::quant_q4_1(src, dst, nb);
        case DType::Q5_0: return qref::quant_q5_0(src, dst, nb);
        case DType::Q5_1: return qref::quant_q5_1(src, dst, nb);
        case DType::Q8_0: return qref::quant_q8_0(src, dst, nb);
        case DType::Q8_1: return qref::quant_q8_1(src, dst, nb);
        case DType::Q2_K: return qref::quant_q2_k(src, dst, nb);
        case DType::Q3_K: return qref::quant_q3_k(src, dst, nb);
        case DType::Q4_K: return qref::quant_q4_k(src, dst, nb);
        case DType::Q5_K: return qref::quant_q5_k(src, dst, nb);
        case DType::Q6_K: return qref::quant_q6_k(src, dst, nb);
        case DType::Q8_K: return qref::quant_q8_k(src, dst, nb);
        case DType::IQ4_NL: return qref::quant_iq4_nl(src, dst, nb);
        case DType::IQ4_XS: return qref::quant_iq4_xs(src, dst, nb);
        case DType::MXFP4: return qref::quant_mxfp4(src, dst, nb);
        case DType::TQ1_0: return qref::quant_tq1_0(src, dst, nb);
        case DType::TQ2_0: return qref::quant_tq2_0(src, dst, nb);
        default: unsupported("quantize_row", t);
    }
}

// The activation type of each weight type (llama.cpp's pairing, so the integer block sums
// line up with its blocks): 32-element blocks with Q8_0 (Q8_1 where the weight has a min, whose
// term needs the activation block's sum), 256-element super-blocks with Q8_K (its bsums carry
// the K-quants' min and offset terms), float weights with a float row.
DType vec_dot_type(DType w) {
    switch (w) {
        case DType::Q4_0: case DType::Q5_0: case DType::Q8_0: case DType::IQ4_NL: case DType::MXFP4: return DType::Q8_0;
        case DType::Q4_1: case DType::Q5_1: return DType::Q8_1;
        case DType::Q2_K: case DType::Q3_K: case DType::Q4_K: case DType::Q5_K: case DType::Q6_K:
        case DType::IQ4_XS: case DType::TQ1_0: case DType::TQ2_0: case DType::IQ2_XXS: case DType::IQ2_XS:
        case DType::IQ2_S: case DType::IQ3_XXS: case DType::IQ3_S: case DType::IQ1_S: case DType::IQ1_M:
            return DType::Q8_K;
        case DType::F16: return DType::F16;
        case DType::F32: case DType::BF16: return DType::F32;
        default: unsupported("vec_dot_type", w);
    }
}

bool is_weight_type(DType t) {
    switch (t) {
        case DType::F32: case DType::F16: case DType::BF16: case DType::Q4_0: case DType::Q4_1: case DType::Q5_0:
        case DType::Q5_1: case DType::Q8_0: case DType::Q2_K: case DType::Q3_K: case DType::Q4_K: case DType::Q5_K:
        case DType::Q6_K: case DType::IQ4_NL: case DType::IQ4_XS: case DType::MXFP4: case DType::TQ1_0: case DType::TQ2_0:
            return true;
        default:
            return is_grid_iq(t);
    }
}

float vec_dot_ref(DType w, const void* wrow, const void* arow, int64_t n) {
    const int64_t nb = static_cast<int64_t>(row_bytes(w, n) / traits(w).block_bytes);
    switch (w) {
        // Plain float types: canon_sum of the products (core/rules/canon.h rule 5), the
        // activation row F16 for F16 weights (products exact), F32 otherwise.
        case DType::F32: {
            const auto* a = static_cast<const uint8_t*>(wrow);
            const auto* b = static_cast<const uint8_t*>(arow);
            return canon_sum_of(n, [&](int64_t i) {
                float x, y;
                std::memcpy(&x, a + 4 * i, 4);
                std::memcpy(&y, b + 4 * i, 4);
                return x * y;
            });
        }
        case DType::F16: case DType::BF16: {
            const auto* a = static_cast<const uint8_t*>(wrow);
            const auto* b = static_cast<const uint8_t*>(arow);
            return canon_sum_of(n, [&](int64_t i) {
                uint16_t hx; std::memcpy(&hx, a + 2 * i, 2);
                if (w == DType::F16) {
                    uint16_t hy; std::memcpy(&hy, b + 2 * i, 2);
                    return fp16_to_fp32(hx) * fp16_to_fp32(hy);
                }
                float y;
                std::memcpy(&y, b + 4 * i, 4);
                return bf16_to_fp32(hx) * y;
            });
        }
        case DType::Q4_0: return qref::dot_q4_0_q8_0(wrow, arow, nb);
        case DType::Q4_1: return qref::dot_q4_1_q8_1(wrow, arow, nb);
        case DType::Q5_0: return qref::dot_q5_0_q8_0(wrow, arow, nb);
        case DType::Q5_1: return qref::dot_q5_1_q8_1(wrow, arow, nb);
        case DType::Q8_0: return qref::dot_q8_0_q8_0(wrow, arow, nb);
        case DType::Q2_K: return qref::dot_q2_k_q8_k(wrow, arow, nb);
        case DType::Q3_K: return qref::dot_q3_k_q8_k(wrow, arow, nb);
        case DType::Q4_K: return qref::dot_q4_k_q8_k(wrow, arow, nb);
        case DType::Q5_K: return qref::dot_q5_k_q8_k(wrow, arow, nb);
        case DType::Q6_K: return qref::dot_q6_k_q8_k(wrow, arow, nb);
        case DType::IQ4_NL: return qref::dot_iq4_nl_q8_0(wrow, arow, nb);
        case DType::MXFP4: return qref::dot_mxfp4_q8_0(wrow, arow, nb);
        case DType::IQ4_XS: return qref::dot_iq4_xs_q8_k(wrow, arow, nb);
        case DType::TQ1_0: return qref::dot_tq1_0_q8_k(wrow, arow, nb);
        case DType::TQ2_0: return qref::dot_tq2_0_q8_k(wrow, arow, nb);
        case DType::IQ2_XXS: return qref::dot_iq2_xxs_q8_k(wrow, arow, nb);
        case DType::IQ2_XS: return qref::dot_iq2_xs_q8_k(wrow, arow, nb);
        case DType::IQ2_S: return qref::dot_iq2_s_q8_k(wrow, arow, nb);
        case DType::IQ3_XXS: return qref::dot_iq3_xxs_q8_k(wrow, arow, nb);
        case DType::IQ3_S: return qref::dot_iq3_s_q8_k(wrow, arow, nb);
        case DType::IQ1_S: return qref::dot_iq1_s_q8_k(wrow, arow, nb);
        case DType::IQ1_M: return qref::dot_iq1_m_q8_k(wrow, arow, nb);
        default: unsupported("vec_dot_ref", w);
    }
}

}  // namespace ls
