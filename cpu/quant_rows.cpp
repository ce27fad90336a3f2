// Fast row conversions: activation quantizers and a few dequantizers, each bit-exact with
// its reference in core/quant/quant.h (tests/ops/test_quant.cpp). Raw AVX2/F16C intrinsics: xsimd 8
// has no byte shuffles, saturating packs or half-float conversions. The matrix products
// themselves are in cpu/quant_gemm.cpp.
#include "cpu/quant_rows.h"

#include <cstring>

#include "core/quant/quant.h"
#include "core/quant/quant_blocks.h"

#if defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)
#define LS_QUANT_AVX2 1
#include <immintrin.h>

#include "cpu/avx2_unpack.h"
#endif

namespace ls::cpu {
using namespace ls::qb;

#if LS_QUANT_AVX2
namespace {

inline float h2f(uint16_t h) { return _cvtsh_ss(h); }  // exact, same as fp16_to_fp32
inline __m256i loadu256(const void* p) { return _mm256_loadu_si256(static_cast<const __m256i*>(p)); }

inline int hsum_i32(__m256i v) {
    __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, _MM_SHUFFLE(1, 0, 3, 2)));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, _MM_SHUFFLE(2, 3, 0, 1)));
    return _mm_cvtsi128_si32(s);
}
inline float hmax_ps(__m256 v) {
    __m128 m = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    m = _mm_max_ps(m, _mm_movehl_ps(m, m));
    m = _mm_max_ss(m, _mm_movehdup_ps(m));
    return _mm_cvtss_f32(m);
}

// Signed 32-value decoders of the legacy weight blocks.
struct DecQ4_0 {
    using Block = BlockQ4_0;
    static __m256i dec(const Block& b) { return _mm256_sub_epi8(nibbles16(b.qs), _mm256_set1_epi8(8)); }
};
struct DecQ5_0 {
    using Block = BlockQ5_0;
    // (q4 | bit<<4) - 16 == q4 | (bit ? 0 : 0xF0) in two's complement bytes.
    static __m256i dec(const Block& b) {
        return _mm256_or_si256(nibbles16(b.qs), _mm256_andnot_si256(bits_to_bytes(b.qh), _mm256_set1_epi8(static_cast<char>(0xF0))));
    }
};
// ---- activation quantizers (bit-exact with core's quantize_row) ----

inline __m256 abs_ps(__m256 v) { return _mm256_and_ps(v, _mm256_castsi256_ps(_mm256_set1_epi32(0x7FFFFFFF))); }
inline __m256i round_i32(__m256 v) { return _mm256_cvtps_epi32(_mm256_round_ps(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC)); }
// 4 x 8 int32 (each in [-127, 127]) -> 32 int8 in order.
inline __m256i pack_i8(__m256i a, __m256i b, __m256i c, __m256i d) {
    const __m256i ab = _mm256_packs_epi32(a, b), cd = _mm256_packs_epi32(c, d);
    return _mm256_permutevar8x32_epi32(_mm256_packs_epi16(ab, cd), _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
}

// One 32-element Q8 block; returns the sum of the quants.
inline int q8_block(const float* x, int8_t* qs, float& d) {
    const __m256 v0 = _mm256_loadu_ps(x), v1 = _mm256_loadu_ps(x + 8), v2 = _mm256_loadu_ps(x + 16), v3 = _mm256_loadu_ps(x + 24);
    const float amax = hmax_ps(_mm256_max_ps(_mm256_max_ps(abs_ps(v0), abs_ps(v1)), _mm256_max_ps(abs_ps(v2), abs_ps(v3))));
    d = amax / 127.0f;
    const __m256 id = _mm256_set1_ps(amax != 0.0f ? 127.0f / amax : 0.0f);
    const __m256i q0 = round_i32(_mm256_mul_ps(v0, id)), q1 = round_i32(_mm256_mul_ps(v1, id));
    const __m256i q2 = round_i32(_mm256_mul_ps(v2, id)), q3 = round_i32(_mm256_mul_ps(v3, id));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(qs), pack_i8(q0, q1, q2, q3));
    return hsum_i32(_mm256_add_epi32(_mm256_add_epi32(q0, q1), _mm256_add_epi32(q2, q3)));
}

void act_q8_0(const float* x, void* dst, int64_t nb) {
    auto* b = static_cast<BlockQ8_0*>(dst);
    for (int64_t i = 0; i < nb; ++i, x += QK) {
        float d;
        q8_block(x, b[i].qs, d);
        b[i].d = _cvtss_sh(d, _MM_FROUND_TO_NEAREST_INT);
    }
}
void act_q8_1(const float* x, void* dst, int64_t nb) {
    auto* b = static_cast<BlockQ8_1*>(dst);
    for (int64_t i = 0; i < nb; ++i, x += QK) {
        float d;
        const int sum = q8_block(x, b[i].qs, d);
        b[i].d = _cvtss_sh(d, _MM_FROUND_TO_NEAREST_INT);
        b[i].s = _cvtss_sh(d * static_cast<float>(sum), _MM_FROUND_TO_NEAREST_INT);
    }
}
void act_q8_k(const float* x, void* dst, int64_t nb) {
    auto* b = static_cast<BlockQ8_K*>(dst);
    for (int64_t i = 0; i < nb; ++i, x += QK_K) {
        __m256 mx = _mm256_setzero_ps();
        for (int k = 0; k < QK_K; k += 8) mx = _mm256_max_ps(mx, abs_ps(_mm256_loadu_ps(x + k)));
        const float amax = hmax_ps(mx);
        if (amax == 0.0f) {
            std::memset(&b[i], 0, sizeof b[i]);
            continue;
        }
        const float iscale = 127.0f / amax;
        b[i].d = 1.0f / iscale;
        const __m256 is = _mm256_set1_ps(iscale);
        for (int k = 0; k < QK_K; k += 32) {
            __m256i q[4];
            for (int t = 0; t < 4; ++t) q[t] = round_i32(_mm256_mul_ps(_mm256_loadu_ps(x + k + 8 * t), is));
            _mm256_storeu_si256(reinterpret_cast<__m256i*>(b[i].qs + k), pack_i8(q[0], q[1], q[2], q[3]));
            b[i].bsums[k / 16] = static_cast<int16_t>(hsum_i32(_mm256_add_epi32(q[0], q[1])));
            b[i].bsums[k / 16 + 1] = static_cast<int16_t>(hsum_i32(_mm256_add_epi32(q[2], q[3])));
        }
    }
}
void act_f16(const float* x, void* dst, int64_t n) {
    auto* o = static_cast<uint8_t*>(dst);
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        _mm_storeu_si128(reinterpret_cast<__m128i*>(o + 2 * i), _mm256_cvtps_ph(_mm256_loadu_ps(x + i), _MM_FROUND_TO_NEAREST_INT));
    for (; i < n; ++i) {
        const uint16_t h = fp32_to_fp16(x[i]);
        std::memcpy(o + 2 * i, &h, 2);
    }
}

// ---- fast dequantizers (same single multiply as the reference: bit-exact) ----

inline void store_i8x32_scaled(__m256i q, __m256 d, float* y) {
    const __m128i lo = _mm256_castsi256_si128(q), hi = _mm256_extracti128_si256(q, 1);
    _mm256_storeu_ps(y, _mm256_mul_ps(d, _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(lo))));
    _mm256_storeu_ps(y + 8, _mm256_mul_ps(d, _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_srli_si128(lo, 8)))));
    _mm256_storeu_ps(y + 16, _mm256_mul_ps(d, _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(hi))));
    _mm256_storeu_ps(y + 24, _mm256_mul_ps(d, _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_srli_si128(hi, 8)))));
}

bool simd_dequant(DType t, const void* src, float* y, int64_t n) {
    switch (t) {
        case DType::F16: {
            const auto* s = static_cast<const uint8_t*>(src);
            int64_t i = 0;
            for (; i + 8 <= n; i += 8) _mm256_storeu_ps(y + i, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(s + 2 * i))));
            for (; i < n; ++i) {
                uint16_t h;
                std::memcpy(&h, s + 2 * i, 2);
                y[i] = h2f(h);
            }
            return true;
        }
        case DType::Q8_0: {
            const auto* b = static_cast<const BlockQ8_0*>(src);
            for (int64_t i = 0; i < n / QK; ++i) store_i8x32_scaled(loadu256(b[i].qs), _mm256_set1_ps(h2f(b[i].d)), y + QK * i);
            return true;
        }
        case DType::Q4_0: {
            const auto* b = static_cast<const BlockQ4_0*>(src);
            for (int64_t i = 0; i < n / QK; ++i) store_i8x32_scaled(DecQ4_0::dec(b[i]), _mm256_set1_ps(h2f(b[i].d)), y + QK * i);
            return true;
        }
        case DType::Q5_0: {
            const auto* b = static_cast<const BlockQ5_0*>(src);
            for (int64_t i = 0; i < n / QK; ++i) store_i8x32_scaled(DecQ5_0::dec(b[i]), _mm256_set1_ps(h2f(b[i].d)), y + QK * i);
            return true;
        }
        default: return false;
    }
}
}  // namespace
#endif  // LS_QUANT_AVX2

void quantize_row_act(DType t, const float* src, void* dst, int64_t n) {
#if LS_QUANT_AVX2
    const int64_t nb = static_cast<int64_t>(row_bytes(t, n) / traits(t).block_bytes);
    switch (t) {
        case DType::Q8_0: return act_q8_0(src, dst, nb);
        case DType::Q8_1: return act_q8_1(src, dst, nb);
        case DType::Q8_K: return act_q8_k(src, dst, nb);
        case DType::F16: return act_f16(src, dst, n);
        default: break;
    }
#endif
    quantize_row(t, src, dst, n);
}

void dequantize_row_fast(DType t, const void* src, float* dst, int64_t n) {
#if LS_QUANT_AVX2
    row_bytes(t, n);
    if (simd_dequant(t, src, dst, n)) return;
#endif
    dequantize_row(t, src, dst, n);
}

}  // namespace ls::cpu
