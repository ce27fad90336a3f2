// AVX2 dot products of quantized weight rows with quantized activation rows, the fast
// activation quantizers and a few fast dequantizers. Every kernel computes the same exact
// integer block sums as its scalar twin in core/ (vec_dot_ref); only the order of the float
// accumulation differs.
//
// Float work uses xsimd batches. The integer work uses raw AVX2 intrinsics: xsimd 8 has no
// equivalent of the u8 x s8 -> s16 pair multiply-add (_mm256_maddubs_epi16), the s16 -> s32
// multiply-add (_mm256_madd_epi16), byte shuffles (_mm256_shuffle_epi8), sign transfer
// (_mm256_sign_epi8), saturating packs, or F16C conversions, which is where the speed is.
#include "cpu/quant_dot.h"

#include <cstring>

#include "core/quant.h"
#include "core/quant_blocks.h"

#if defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)
#define LS_QUANT_AVX2 1
#include <immintrin.h>

#include <xsimd/xsimd.hpp>
#endif

namespace ls::cpu {
using namespace ls::qb;

#if LS_QUANT_AVX2
namespace {
using fbatch = xsimd::batch<float, xsimd::avx2>;

inline float h2f(uint16_t h) { return _cvtsh_ss(h); }  // exact, same as fp16_to_fp32
inline __m256i loadu256(const void* p) { return _mm256_loadu_si256(static_cast<const __m256i*>(p)); }
inline fbatch to_float(__m256i v) { return fbatch(_mm256_cvtepi32_ps(v)); }

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

// 8 int32 lanes, each the sum of 4 products of signed bytes. maddubs wants an unsigned
// operand, so |x| and y*sign(x) are used; pair sums stay within int16 as long as y != -128
// (activations are quantized to [-127, 127]).
inline __m256i dot_i8(__m256i x, __m256i y) {
    const __m256i p16 = _mm256_maddubs_epi16(_mm256_sign_epi8(x, x), _mm256_sign_epi8(y, x));
    return _mm256_madd_epi16(p16, _mm256_set1_epi16(1));
}

// 32 nibbles of a legacy block as bytes 0..15: low nibbles first, then high nibbles.
inline __m256i unpack_nibbles16(const uint8_t* qs) {
    const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(qs));
    const __m256i r = _mm256_set_m128i(_mm_srli_epi16(v, 4), v);
    return _mm256_and_si256(r, _mm256_set1_epi8(0x0F));
}
// Byte i = 0xFF where bit i of the 32-bit word is set.
inline __m256i bits_to_bytes(const uint8_t* qh) {
    uint32_t w;
    std::memcpy(&w, qh, 4);
    const __m256i shuf = _mm256_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1,
                                          2, 2, 2, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3);
    const __m256i v = _mm256_shuffle_epi8(_mm256_set1_epi32(static_cast<int>(w)), shuf);
    const __m256i bit = _mm256_set1_epi64x(static_cast<long long>(0x8040201008040201ULL));
    return _mm256_cmpeq_epi8(_mm256_and_si256(v, bit), bit);
}

// Signed 32-value decoders of the legacy weight blocks.
struct DecQ4_0 {
    using Block = BlockQ4_0;
    static __m256i dec(const Block& b) { return _mm256_sub_epi8(unpack_nibbles16(b.qs), _mm256_set1_epi8(8)); }
};
struct DecQ5_0 {
    using Block = BlockQ5_0;
    // (q4 | bit<<4) - 16 == q4 | (bit ? 0 : 0xF0) in two's complement bytes.
    static __m256i dec(const Block& b) {
        return _mm256_or_si256(unpack_nibbles16(b.qs), _mm256_andnot_si256(bits_to_bytes(b.qh), _mm256_set1_epi8(static_cast<char>(0xF0))));
    }
};
struct DecQ8_0 {
    using Block = BlockQ8_0;
    static __m256i dec(const Block& b) { return loadu256(b.qs); }
};

template <class Dec, int NR>
void dot_legacy(const uint8_t* w, size_t stride, const void* a, int64_t nb, float* out) {
    using Block = typename Dec::Block;
    const auto* y = static_cast<const BlockQ8_0*>(a);
    const Block* x[NR];
    fbatch acc[NR];
    for (int r = 0; r < NR; ++r) {
        x[r] = reinterpret_cast<const Block*>(w + stride * static_cast<size_t>(r));
        acc[r] = fbatch(0.0f);
    }
    for (int64_t i = 0; i < nb; ++i) {
        const __m256i yv = loadu256(y[i].qs);
        const float dy = h2f(y[i].d);
        for (int r = 0; r < NR; ++r) {
            const __m256i p = dot_i8(Dec::dec(x[r][i]), yv);
            acc[r] = xsimd::fma(fbatch(h2f(x[r][i].d) * dy), to_float(p), acc[r]);
        }
    }
    for (int r = 0; r < NR; ++r) out[r] = xsimd::hadd(acc[r]);
}

// Q4_K / Q5_K 6-bit scales and mins of one super-block, as bytes.
inline void k4_scales(const uint8_t* s, uint8_t* sc, uint8_t* mn) {
    uint32_t u[3];
    std::memcpy(u, s, 12);
    const uint32_t lo6 = 0x3F3F3F3Fu, lo4 = 0x0F0F0F0Fu, lo2 = 0x03030303u;
    const uint32_t s03 = u[0] & lo6, m03 = u[1] & lo6;
    const uint32_t s47 = (u[2] & lo4) | (((u[0] >> 6) & lo2) << 4);
    const uint32_t m47 = ((u[2] >> 4) & lo4) | (((u[1] >> 6) & lo2) << 4);
    std::memcpy(sc, &s03, 4); std::memcpy(sc + 4, &s47, 4);
    std::memcpy(mn, &m03, 4); std::memcpy(mn + 4, &m47, 4);
}

// Q4_K (HasHigh = false) and Q5_K (true): per 64 elements, the low nibbles of 32 bytes belong
// to sub-block 2j and the high nibbles to 2j+1; Q5_K adds bit 2j / 2j+1 of qh as bit 4.
// Returns the exact integer sum sum_j sc_j * (q . y)_j of one super-block as 8 int32 lanes,
// and the min term sum_j m_j * bsum_j.
template <bool HasHigh, class Block>
inline __m256i k45_superblock(const Block& b, const BlockQ8_K& y, int& msum) {
    uint8_t sc[8], mn[8];
    k4_scales(b.scales, sc, mn);
    // sum_j m_j * (bsums[2j] + bsums[2j+1]): pairwise-add the 16 bsums, multiply-add with mins.
    const __m256i bs = loadu256(y.bsums);
    const __m128i pairs = _mm_hadd_epi16(_mm256_castsi256_si128(bs), _mm256_extracti128_si256(bs, 1));
    __m128i mins16;
    {
        uint64_t m8;
        std::memcpy(&m8, mn, 8);
        mins16 = _mm_cvtepu8_epi16(_mm_cvtsi64_si128(static_cast<long long>(m8)));
    }
    __m128i mprod = _mm_madd_epi16(pairs, mins16);
    mprod = _mm_add_epi32(mprod, _mm_shuffle_epi32(mprod, _MM_SHUFFLE(1, 0, 3, 2)));
    mprod = _mm_add_epi32(mprod, _mm_shuffle_epi32(mprod, _MM_SHUFFLE(2, 3, 0, 1)));
    msum = _mm_cvtsi128_si32(mprod);

    uint64_t s8;
    std::memcpy(&s8, sc, 8);
    // 8 int16 scales in both 128-bit lanes; a byte shuffle broadcasts scale k to all lanes.
    const __m256i scw = _mm256_broadcastsi128_si256(_mm_cvtepu8_epi16(_mm_cvtsi64_si128(static_cast<long long>(s8))));
    const __m256i m4 = _mm256_set1_epi8(0x0F);
    __m256i hb;
    if constexpr (HasHigh) hb = loadu256(b.qh);
    __m256i isum = _mm256_setzero_si256();
    for (int j = 0; j < 4; ++j) {
        const __m256i y0 = loadu256(y.qs + 64 * j), y1 = loadu256(y.qs + 64 * j + 32);
        const __m256i q = loadu256(b.qs + 32 * j);
        __m256i lo = _mm256_and_si256(q, m4);
        __m256i hi = _mm256_and_si256(_mm256_srli_epi16(q, 4), m4);
        if constexpr (HasHigh) {
            const __m256i one = _mm256_set1_epi8(1);
            lo = _mm256_or_si256(lo, _mm256_slli_epi16(_mm256_and_si256(hb, one), 4));
            hi = _mm256_or_si256(hi, _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(hb, 1), one), 4));
            hb = _mm256_srli_epi16(hb, 2);
        }
        const __m256i s0 = _mm256_shuffle_epi8(scw, _mm256_set1_epi16(static_cast<short>(0x0100 + 0x0404 * j)));
        const __m256i s1 = _mm256_shuffle_epi8(scw, _mm256_set1_epi16(static_cast<short>(0x0302 + 0x0404 * j)));
        const __m256i p0 = _mm256_madd_epi16(_mm256_maddubs_epi16(lo, y0), s0);
        const __m256i p1 = _mm256_madd_epi16(_mm256_maddubs_epi16(hi, y1), s1);
        isum = _mm256_add_epi32(isum, _mm256_add_epi32(p0, p1));
    }
    return isum;
}

// NR rows: each row's super-block is finished before the next row's (the activation block
// stays in L1, NR weight streams are in flight at once).
template <bool HasHigh, int NR>
void dot_k45(const uint8_t* w, size_t stride, const void* a, int64_t nb, float* out) {
    using Block = std::conditional_t<HasHigh, BlockQ5_K, BlockQ4_K>;
    const auto* y = static_cast<const BlockQ8_K*>(a);
    const Block* x[NR];
    fbatch acc[NR];
    float macc[NR];
    for (int r = 0; r < NR; ++r) {
        x[r] = reinterpret_cast<const Block*>(w + stride * static_cast<size_t>(r));
        acc[r] = fbatch(0.0f);
        macc[r] = 0;
    }
    for (int64_t i = 0; i < nb; ++i) {
        for (int r = 0; r < NR; ++r) {
            int msum;
            const __m256i isum = k45_superblock<HasHigh>(x[r][i], y[i], msum);
            acc[r] = xsimd::fma(fbatch(y[i].d * h2f(x[r][i].d)), to_float(isum), acc[r]);
            macc[r] += (y[i].d * h2f(x[r][i].dmin)) * static_cast<float>(msum);
        }
    }
    for (int r = 0; r < NR; ++r) out[r] = xsimd::hadd(acc[r]) - macc[r];
}

// Q6_K: values q in [0, 63] (offset 32). sum (q-32)*y = sum q*y - 32*bsum per 16 elements,
// so the unsigned q multiply directly and the offset comes from Q8_K's bsums.
template <int NR>
void dot_q6k(const uint8_t* w, size_t stride, const void* a, int64_t nb, float* out) {
    const auto* y = static_cast<const BlockQ8_K*>(a);
    const BlockQ6_K* x[NR];
    fbatch acc[NR];
    for (int r = 0; r < NR; ++r) {
        x[r] = reinterpret_cast<const BlockQ6_K*>(w + stride * static_cast<size_t>(r));
        acc[r] = fbatch(0.0f);
    }
    const __m256i m4 = _mm256_set1_epi8(0x0F), m3 = _mm256_set1_epi8(0x03);
    const __m256i m0c = _mm256_set1_epi8(0x0C), m30 = _mm256_set1_epi8(0x30);
    // Broadcast int16 scale pairs: low 128 bits = scale 2k, high = scale 2k+1.
    const __m256i pick[4] = {
        _mm256_setr_epi8(0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 2, 3, 2, 3, 2, 3, 2, 3, 2, 3, 2, 3, 2, 3, 2, 3),
        _mm256_setr_epi8(4, 5, 4, 5, 4, 5, 4, 5, 4, 5, 4, 5, 4, 5, 4, 5, 6, 7, 6, 7, 6, 7, 6, 7, 6, 7, 6, 7, 6, 7, 6, 7),
        _mm256_setr_epi8(8, 9, 8, 9, 8, 9, 8, 9, 8, 9, 8, 9, 8, 9, 8, 9, 10, 11, 10, 11, 10, 11, 10, 11, 10, 11, 10, 11, 10, 11, 10, 11),
        _mm256_setr_epi8(12, 13, 12, 13, 12, 13, 12, 13, 12, 13, 12, 13, 12, 13, 12, 13, 14, 15, 14, 15, 14, 15, 14, 15, 14, 15, 14, 15, 14, 15, 14, 15)};
    for (int64_t i = 0; i < nb; ++i) {
        const int8_t* yq = y[i].qs;
        for (int r = 0; r < NR; ++r) {  // finish this row's super-block (activations stay in L1)
            const BlockQ6_K& b = x[r][i];
            int corr = 0;
            for (int s = 0; s < 16; ++s) corr += b.scales[s] * y[i].bsums[s];
            __m256i isum = _mm256_setr_epi32(-32 * corr, 0, 0, 0, 0, 0, 0, 0);
            for (int h = 0; h < 2; ++h) {
                const __m256i y0 = loadu256(yq + 128 * h), y1 = loadu256(yq + 128 * h + 32);
                const __m256i y2 = loadu256(yq + 128 * h + 64), y3 = loadu256(yq + 128 * h + 96);
                const __m256i l0 = loadu256(b.ql + 64 * h), l1 = loadu256(b.ql + 64 * h + 32);
                const __m256i hq = loadu256(b.qh + 32 * h);
                const __m256i q1 = _mm256_or_si256(_mm256_and_si256(l0, m4), _mm256_slli_epi16(_mm256_and_si256(hq, m3), 4));
                const __m256i q2 = _mm256_or_si256(_mm256_and_si256(l1, m4), _mm256_slli_epi16(_mm256_and_si256(hq, m0c), 2));
                const __m256i q3 = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l0, 4), m4), _mm256_and_si256(hq, m30));
                const __m256i q4 = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l1, 4), m4),
                                                   _mm256_and_si256(_mm256_srli_epi16(hq, 2), m30));
                const __m128i sc8 = _mm_cvtepi8_epi16(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(b.scales + 8 * h)));
                const __m256i scw = _mm256_broadcastsi128_si256(sc8);
                __m256i s = _mm256_add_epi32(
                    _mm256_madd_epi16(_mm256_maddubs_epi16(q1, y0), _mm256_shuffle_epi8(scw, pick[0])),
                    _mm256_madd_epi16(_mm256_maddubs_epi16(q2, y1), _mm256_shuffle_epi8(scw, pick[1])));
                s = _mm256_add_epi32(s, _mm256_madd_epi16(_mm256_maddubs_epi16(q3, y2), _mm256_shuffle_epi8(scw, pick[2])));
                s = _mm256_add_epi32(s, _mm256_madd_epi16(_mm256_maddubs_epi16(q4, y3), _mm256_shuffle_epi8(scw, pick[3])));
                isum = _mm256_add_epi32(isum, s);
            }
            acc[r] = xsimd::fma(fbatch(y[i].d * h2f(b.d)), to_float(isum), acc[r]);
        }
    }
    for (int r = 0; r < NR; ++r) out[r] = xsimd::hadd(acc[r]);
}

float dot_f32(const float* x, const float* y, int64_t n) {
    fbatch a0(0.0f), a1(0.0f), a2(0.0f), a3(0.0f);
    int64_t i = 0;
    for (; i + 32 <= n; i += 32) {
        a0 = xsimd::fma(fbatch::load_unaligned(x + i), fbatch::load_unaligned(y + i), a0);
        a1 = xsimd::fma(fbatch::load_unaligned(x + i + 8), fbatch::load_unaligned(y + i + 8), a1);
        a2 = xsimd::fma(fbatch::load_unaligned(x + i + 16), fbatch::load_unaligned(y + i + 16), a2);
        a3 = xsimd::fma(fbatch::load_unaligned(x + i + 24), fbatch::load_unaligned(y + i + 24), a3);
    }
    for (; i + 8 <= n; i += 8) a0 = xsimd::fma(fbatch::load_unaligned(x + i), fbatch::load_unaligned(y + i), a0);
    float s = xsimd::hadd((a0 + a1) + (a2 + a3));
    for (; i < n; ++i) s += x[i] * y[i];
    return s;
}

inline fbatch load_f16(const uint8_t* p) { return fbatch(_mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)))); }
inline fbatch load_bf16(const uint8_t* p) {
    const __m256i v = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
    return fbatch(_mm256_castsi256_ps(_mm256_slli_epi32(v, 16)));
}

float dot_f16(const uint8_t* x, const uint8_t* y, int64_t n) {
    fbatch a0(0.0f), a1(0.0f), a2(0.0f), a3(0.0f);
    int64_t i = 0;
    for (; i + 32 <= n; i += 32) {
        a0 = xsimd::fma(load_f16(x + 2 * i), load_f16(y + 2 * i), a0);
        a1 = xsimd::fma(load_f16(x + 2 * i + 16), load_f16(y + 2 * i + 16), a1);
        a2 = xsimd::fma(load_f16(x + 2 * i + 32), load_f16(y + 2 * i + 32), a2);
        a3 = xsimd::fma(load_f16(x + 2 * i + 48), load_f16(y + 2 * i + 48), a3);
    }
    for (; i + 8 <= n; i += 8) a0 = xsimd::fma(load_f16(x + 2 * i), load_f16(y + 2 * i), a0);
    float s = xsimd::hadd((a0 + a1) + (a2 + a3));
    for (; i < n; ++i) {
        uint16_t hx, hy;
        std::memcpy(&hx, x + 2 * i, 2);
        std::memcpy(&hy, y + 2 * i, 2);
        s += h2f(hx) * h2f(hy);
    }
    return s;
}

float dot_bf16_f32(const uint8_t* x, const float* y, int64_t n) {
    fbatch a0(0.0f), a1(0.0f);
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) {
        a0 = xsimd::fma(load_bf16(x + 2 * i), fbatch::load_unaligned(y + i), a0);
        a1 = xsimd::fma(load_bf16(x + 2 * i + 16), fbatch::load_unaligned(y + i + 8), a1);
    }
    for (; i + 8 <= n; i += 8) a0 = xsimd::fma(load_bf16(x + 2 * i), fbatch::load_unaligned(y + i), a0);
    float s = xsimd::hadd(a0 + a1);
    for (; i < n; ++i) {
        uint16_t h;
        std::memcpy(&h, x + 2 * i, 2);
        s += bf16_to_fp32(h) * y[i];
    }
    return s;
}

// Rows kernel dispatch: 4 rows at a time, then single rows; false if no SIMD kernel.
template <template <int> class K>
void run_rows(const uint8_t* w, size_t stride, int nr, const void* a, int64_t nb, float* out) {
    int r = 0;
    for (; r + 4 <= nr; r += 4) K<4>::run(w + stride * static_cast<size_t>(r), stride, a, nb, out + r);
    for (; r < nr; ++r) K<1>::run(w + stride * static_cast<size_t>(r), stride, a, nb, out + r);
}
template <int NR> struct KQ4_0 { static void run(const uint8_t* w, size_t s, const void* a, int64_t nb, float* o) { dot_legacy<DecQ4_0, NR>(w, s, a, nb, o); } };
template <int NR> struct KQ5_0 { static void run(const uint8_t* w, size_t s, const void* a, int64_t nb, float* o) { dot_legacy<DecQ5_0, NR>(w, s, a, nb, o); } };
template <int NR> struct KQ8_0 { static void run(const uint8_t* w, size_t s, const void* a, int64_t nb, float* o) { dot_legacy<DecQ8_0, NR>(w, s, a, nb, o); } };
template <int NR> struct KQ4_K { static void run(const uint8_t* w, size_t s, const void* a, int64_t nb, float* o) { dot_k45<false, NR>(w, s, a, nb, o); } };
template <int NR> struct KQ5_K { static void run(const uint8_t* w, size_t s, const void* a, int64_t nb, float* o) { dot_k45<true, NR>(w, s, a, nb, o); } };
template <int NR> struct KQ6_K { static void run(const uint8_t* w, size_t s, const void* a, int64_t nb, float* o) { dot_q6k<NR>(w, s, a, nb, o); } };

bool simd_rows(DType t, const uint8_t* w, size_t stride, int nr, const void* a, int64_t n, float* out) {
    switch (t) {
        case DType::Q4_0: run_rows<KQ4_0>(w, stride, nr, a, n / QK, out); return true;
        case DType::Q5_0: run_rows<KQ5_0>(w, stride, nr, a, n / QK, out); return true;
        case DType::Q8_0: run_rows<KQ8_0>(w, stride, nr, a, n / QK, out); return true;
        case DType::Q4_K: run_rows<KQ4_K>(w, stride, nr, a, n / QK_K, out); return true;
        case DType::Q5_K: run_rows<KQ5_K>(w, stride, nr, a, n / QK_K, out); return true;
        case DType::Q6_K: run_rows<KQ6_K>(w, stride, nr, a, n / QK_K, out); return true;
        case DType::F32: case DType::F16: case DType::BF16:
            for (int r = 0; r < nr; ++r) {
                const uint8_t* x = w + stride * static_cast<size_t>(r);
                out[r] = t == DType::F32 ? dot_f32(reinterpret_cast<const float*>(x), static_cast<const float*>(a), n)
                       : t == DType::F16 ? dot_f16(x, static_cast<const uint8_t*>(a), n)
                                         : dot_bf16_f32(x, static_cast<const float*>(a), n);
            }
            return true;
        default: return false;
    }
}

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

float vec_dot(DType w, const void* wrow, const void* arow, int64_t n) {
#if LS_QUANT_AVX2
    float r;
    row_bytes(w, n);  // validates n against the block size (throws)
    if (simd_rows(w, static_cast<const uint8_t*>(wrow), 0, 1, arow, n, &r)) return r;
#endif
    return vec_dot_ref(w, wrow, arow, n);
}

void vec_dot_rows(DType w, const void* wrow, size_t wstride, int nr, const void* arow, int64_t n, float* out) {
#if LS_QUANT_AVX2
    row_bytes(w, n);
    if (simd_rows(w, static_cast<const uint8_t*>(wrow), wstride, nr, arow, n, out)) return;
#endif
    for (int r = 0; r < nr; ++r)
        out[r] = vec_dot_ref(w, static_cast<const uint8_t*>(wrow) + wstride * static_cast<size_t>(r), arow, n);
}

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
