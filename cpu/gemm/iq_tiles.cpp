// IQ4_XS and the grid i-quants (IQ2_XXS, IQ2_XS, IQ2_S, IQ3_XXS, IQ3_S, IQ1_S, IQ1_M) over
// Q8_K in 8-row tiles. Each row's super-block is decoded once to 256 signed int8 values v
// (core/quant/iq_access.h's integers: IQ4_XS's levels, codebook values times their signs,
// IQ1's 8 * grid +- 1) and int16 sub-block scales; a token's sum is maddubs(|v|, y * sign(v))
// (pairs at most 2 * 127 * 127, inside int16) widened by madd with the scale: the exact
// integers of the reference, then its float chain and the type's exact 1/den at the end.
#include "cpu/gemm/tiles.h"

#if LS_GEMM_AVX2
#include <cstring>

#include "core/quant/block_access.h"
#include "core/quant/iq_access.h"
#include "core/quant/quant_blocks.h"
#include "cpu/avx2_unpack.h"
#include "cpu/gemm/ksum.h"
#include "cpu/gemm/vec256.h"

namespace ls::cpu::gemm {
using namespace ls::qb;

namespace {
uint32_t signs4(uint8_t a, uint8_t b, uint8_t c, uint8_t d) { return uint32_t(a) | uint32_t(b) << 8 | uint32_t(c) << 16 | uint32_t(d) << 24; }
void store(int8_t* v, __m256i x) { _mm256_store_si256(reinterpret_cast<__m256i*>(v), x); }

// Decoders: d (the f16 block scale bits), and decode(): v[256] and ls[256 / kIqSub].
template <class B> uint16_t d_bits(const B& b) { return b.d; }
template <> uint16_t d_bits(const BlockIQ1_M& b) { return iq1m_d(b); }

void decode(const BlockIQ4_XS& b, int8_t* v, int16_t* ls) {
    const __m256i tbl = _mm256_broadcastsi128_si256(_mm_set_epi64x(static_cast<long long>(kIQ4NLHi), static_cast<long long>(kIQ4NLLo)));
    for (int s = 0; s < 8; ++s) {
        store(v + 32 * s, _mm256_shuffle_epi8(tbl, nibbles16(b.qs + 16 * s)));
        ls[s] = static_cast<int16_t>(iq4xs_scale(b, s));
    }
}
// The grid types whose codebook bytes are all positive (IQ2: 8..43, IQ3: 1..62): chunk ib (32
// values) as its codebook bytes g and its 32 sign bits (set: negative). decode() stores
// g * sign; the one-token tile multiplies g by the token's bytes carrying the signs instead.
struct GridChunk {
    __m256i g;
    uint32_t signs;
};
[[gnu::always_inline]] inline __m256i grid4(uint64_t g0, uint64_t g1, uint64_t g2, uint64_t g3) {
    return _mm256_setr_epi64x(static_cast<long long>(g0), static_cast<long long>(g1), static_cast<long long>(g2), static_cast<long long>(g3));
}
[[gnu::always_inline]] inline __m256i quads8(const uint32_t* e) {
    return _mm256_setr_epi32(static_cast<int>(e[0]), static_cast<int>(e[1]), static_cast<int>(e[2]), static_cast<int>(e[3]),
                             static_cast<int>(e[4]), static_cast<int>(e[5]), static_cast<int>(e[6]), static_cast<int>(e[7]));
}
// +1 or -1 per byte from 32 sign bits.
[[gnu::always_inline]] inline __m256i sign_pm(uint32_t signs) {
    return _mm256_or_si256(bits_to_bytes(reinterpret_cast<const uint8_t*>(&signs)), _mm256_set1_epi8(1));
}
[[gnu::always_inline]] inline uint32_t xxs_signs(uint32_t a) {
    return signs4(kIQSigns[a & 127], kIQSigns[(a >> 7) & 127], kIQSigns[(a >> 14) & 127], kIQSigns[(a >> 21) & 127]);
}
[[gnu::always_inline]] inline GridChunk chunk(const BlockIQ2_XXS& b, int ib) {
    const uint8_t* q = b.qs + 8 * ib;
    return {grid4(kIQ2XXSGrid[q[0]], kIQ2XXSGrid[q[1]], kIQ2XXSGrid[q[2]], kIQ2XXSGrid[q[3]]), xxs_signs(le32(q + 4))};
}
[[gnu::always_inline]] inline GridChunk chunk(const BlockIQ2_XS& b, int ib) {
    const uint16_t* q = b.qs + 4 * ib;
    return {grid4(kIQ2XSGrid[q[0] & 511], kIQ2XSGrid[q[1] & 511], kIQ2XSGrid[q[2] & 511], kIQ2XSGrid[q[3] & 511]),
            signs4(kIQSigns[q[0] >> 9], kIQSigns[q[1] >> 9], kIQSigns[q[2] >> 9], kIQSigns[q[3] >> 9])};
}
[[gnu::always_inline]] inline GridChunk chunk(const BlockIQ2_S& b, int ib) {
    uint64_t g[4];
    for (int l = 0; l < 4; ++l) g[l] = kIQ2SGrid[b.qs[4 * ib + l] | (((b.qh[ib] >> (2 * l)) & 3) << 8)];
    uint32_t sg;
    std::memcpy(&sg, b.qs + 32 + 4 * ib, 4);
    return {grid4(g[0], g[1], g[2], g[3]), sg};
}
[[gnu::always_inline]] inline GridChunk chunk(const BlockIQ3_XXS& b, int ib) {
    uint32_t e[8];
    for (int k = 0; k < 8; ++k) e[k] = kIQ3XXSGrid[b.qs[8 * ib + k]];
    return {quads8(e), xxs_signs(le32(b.qs + 64 + 4 * ib))};
}
[[gnu::always_inline]] inline GridChunk chunk(const BlockIQ3_S& b, int ib) {
    uint32_t e[8];
    for (int k = 0; k < 8; ++k) e[k] = kIQ3SGrid[b.qs[8 * ib + k] | (((b.qh[ib] >> k) & 1) << 8)];
    uint32_t sg;
    std::memcpy(&sg, b.signs + 4 * ib, 4);
    return {quads8(e), sg};
}
template <class B>
concept PositiveGrid = requires(const B& b) { chunk(b, 0); };
template <PositiveGrid B>
void decode(const B& b, int8_t* v, int16_t* ls) {
    for (int ib = 0; ib < 8; ++ib) {
        const GridChunk c = chunk(b, ib);
        store(v + 32 * ib, _mm256_sign_epi8(c.g, sign_pm(c.signs)));
    }
    for (int s = 0; s < QK_K / kIqSub<B>; ++s) ls[s] = static_cast<int16_t>(iq_scale(b, s));
}
// IQ1: 8 * grid (three doublings of bytes in -1..1) plus each group's delta sign (+-1).
[[gnu::always_inline]] inline __m256i iq1_values(const uint64_t* g, __m256i delta) {
    __m256i x = _mm256_setr_epi64x(static_cast<long long>(g[0]), static_cast<long long>(g[1]), static_cast<long long>(g[2]),
                                   static_cast<long long>(g[3]));
    x = _mm256_add_epi8(x, x);
    x = _mm256_add_epi8(x, x);
    x = _mm256_add_epi8(x, x);
    return _mm256_add_epi8(x, delta);
}
void decode(const BlockIQ1_S& b, int8_t* v, int16_t* ls) {
    for (int ib = 0; ib < 8; ++ib) {
        uint64_t g[4];
        for (int l = 0; l < 4; ++l) g[l] = kIQ1SGrid[b.qs[4 * ib + l] | (((b.qh[ib] >> (3 * l)) & 7) << 8)];
        store(v + 32 * ib, iq1_values(g, _mm256_set1_epi8((b.qh[ib] & 0x8000) ? -1 : 1)));
        ls[ib] = static_cast<int16_t>(iq_scale(b, ib));
    }
}
void decode(const BlockIQ1_M& b, int8_t* v, int16_t* ls) {
    for (int ib = 0; ib < 8; ++ib) {
        uint64_t g[4];
        char dl[4];
        for (int l = 0; l < 4; ++l) {
            const int gi = 4 * ib + l;
            const int nib = (b.qh[gi / 2] >> (4 * (gi % 2))) & 0x0F;
            g[l] = kIQ1SGrid[b.qs[gi] | ((nib & 7) << 8)];
            dl[l] = (nib & 8) ? -1 : 1;
        }
        auto fill = [](char c) { return static_cast<long long>(0x0101010101010101ull * static_cast<uint8_t>(c)); };
        const __m256i delta = _mm256_setr_epi64x(fill(dl[0]), fill(dl[1]), fill(dl[2]), fill(dl[3]));
        store(v + 32 * ib, iq1_values(g, delta));
    }
    for (int s = 0; s < 16; ++s) ls[s] = static_cast<int16_t>(iq_scale(b, s));
}

// One token (a decode step): each row's decoded super-block meets the token
// at once, the chunk's |v|, sign and scale formed in registers instead of being stored for
// tokens that do not come. The same exact integers and float chain as sv_tile (tests: every
// tile against the reference at M = 1).
template <class B>
void sv_tile_one(const uint8_t* const* wr, const uint8_t* a, int64_t nb, float* out, int nr, size_t pf) {
    alignas(64) int8_t qs[QK_K];
    __m256 acc = _mm256_setzero_ps();
    for (int64_t i = 0; i < nb; ++i) {
        const BlockQ8_K& y = reinterpret_cast<const BlockQ8_K*>(a)[i];
        alignas(16) uint16_t dh[8];
        __m256i v[8];
        for (int r = 0; r < 8; ++r) {
            const B& b = reinterpret_cast<const B*>(wr[r])[i];
            dh[r] = d_bits(b);
            __m256i s = _mm256_setzero_si256();
            if constexpr (PositiveGrid<B>) {
                // |v| is the codebook byte itself; the signs go onto the token's bytes.
                for (int j = 0; j < 8; ++j) {
                    const GridChunk c = chunk(b, j);
                    const __m256i p = _mm256_maddubs_epi16(c.g, _mm256_sign_epi8(loadu(y.qs + 32 * j), sign_pm(c.signs)));
                    const __m256i sc = kIqSub<B> == 32 ? _mm256_set1_epi16(static_cast<int16_t>(iq_scale(b, j)))
                                                       : _mm256_set_m128i(_mm_set1_epi16(static_cast<int16_t>(iq_scale(b, 2 * j + 1))),
                                                                          _mm_set1_epi16(static_cast<int16_t>(iq_scale(b, 2 * j))));
                    s = _mm256_add_epi32(s, _mm256_madd_epi16(p, sc));
                }
                v[r] = s;
                continue;
            }
            int16_t ls[16];
            decode(b, qs, ls);
            for (int j = 0; j < 8; ++j) {
                const __m256i x = _mm256_load_si256(reinterpret_cast<const __m256i*>(qs + 32 * j));
                const __m256i p = _mm256_maddubs_epi16(_mm256_abs_epi8(x), _mm256_sign_epi8(loadu(y.qs + 32 * j), x));
                const __m256i sc = kIqSub<B> == 32 ? _mm256_set1_epi16(ls[j]) : _mm256_set_m128i(_mm_set1_epi16(ls[2 * j + 1]), _mm_set1_epi16(ls[2 * j]));
                s = _mm256_add_epi32(s, _mm256_madd_epi16(p, sc));
            }
            v[r] = s;
        }
        if (pf) prefetch_group(wr[0] + pf, sizeof(B), i);
        float yd;
        std::memcpy(&yd, &y.d, 4);
        acc = _mm256_add_ps(acc, _mm256_mul_ps(_mm256_mul_ps(load_d8(dh), _mm256_set1_ps(yd)), _mm256_cvtepi32_ps(hsum8(v))));
    }
    if constexpr (kIqDen<B> != 1) acc = _mm256_mul_ps(acc, _mm256_set1_ps(1.0f / static_cast<float>(kIqDen<B>)));
    store_out(acc, out, nr);
}

template <int G, class B>
void sv_tile(const uint8_t* const* wr, const uint8_t* a, size_t astride, int64_t nb, float* const* out, int nr, size_t pf) {
    if constexpr (G == 1) return sv_tile_one<B>(wr, a, nb, out[0], nr, pf);
    alignas(64) int8_t qs[8][QK_K];   // v
    alignas(64) uint8_t qa[8][QK_K];  // |v|
    __m256i scv[8][8];                // scale(s) of each 32-value chunk, int16 (two halves for 16-element sub-blocks)
    __m256 acc[G];
    for (int g = 0; g < G; ++g) acc[g] = _mm256_setzero_ps();
    for (int64_t i = 0; i < nb; ++i) {
        alignas(16) uint16_t dh[8];
        for (int r = 0; r < 8; ++r) {
            const B& b = reinterpret_cast<const B*>(wr[r])[i];
            dh[r] = d_bits(b);
            int16_t ls[16];
            decode(b, qs[r], ls);
            for (int j = 0; j < 8; ++j) {
                const __m256i v = _mm256_load_si256(reinterpret_cast<const __m256i*>(qs[r] + 32 * j));
                _mm256_store_si256(reinterpret_cast<__m256i*>(qa[r] + 32 * j), _mm256_abs_epi8(v));
                if constexpr (kIqSub<B> == 32) scv[r][j] = _mm256_set1_epi16(ls[j]);
                else scv[r][j] = _mm256_set_m128i(_mm_set1_epi16(ls[2 * j + 1]), _mm_set1_epi16(ls[2 * j]));
            }
        }
        if (pf) prefetch_group(wr[0] + pf, sizeof(B), i);
        const __m256 dw = load_d8(dh);
        for (int g = 0; g < G; ++g) {
            const BlockQ8_K& y = reinterpret_cast<const BlockQ8_K*>(a + astride * static_cast<size_t>(g))[i];
            __m256i v[8];
            for (int r = 0; r < 8; ++r) {
                __m256i s = _mm256_setzero_si256();
                for (int j = 0; j < 8; ++j) {
                    const __m256i ys = _mm256_sign_epi8(loadu(y.qs + 32 * j), _mm256_load_si256(reinterpret_cast<const __m256i*>(qs[r] + 32 * j)));
                    const __m256i p = _mm256_maddubs_epi16(_mm256_load_si256(reinterpret_cast<const __m256i*>(qa[r] + 32 * j)), ys);
                    s = _mm256_add_epi32(s, _mm256_madd_epi16(p, scv[r][j]));
                }
                v[r] = s;
            }
            float yd;
            std::memcpy(&yd, &y.d, 4);
            // sum = sum + (d_a * d_w) * isum: the product rounded, then the sum; no fma.
            acc[g] = _mm256_add_ps(acc[g], _mm256_mul_ps(_mm256_mul_ps(dw, _mm256_set1_ps(yd)), _mm256_cvtepi32_ps(hsum8(v))));
        }
    }
    for (int g = 0; g < G; ++g) {
        if constexpr (kIqDen<B> != 1) acc[g] = _mm256_mul_ps(acc[g], _mm256_set1_ps(1.0f / static_cast<float>(kIqDen<B>)));
        store_out(acc[g], out[g], nr);
    }
}
}  // namespace

template <int G>
void iq_tile8(DType t, const uint8_t* const* wr, const uint8_t* a, size_t astride, int64_t k, float* const* out, int nr, size_t pf) {
    const int64_t nb = k / QK_K;
    switch (t) {
        case DType::IQ4_XS: return sv_tile<G, BlockIQ4_XS>(wr, a, astride, nb, out, nr, pf);
        case DType::IQ2_XXS: return sv_tile<G, BlockIQ2_XXS>(wr, a, astride, nb, out, nr, pf);
        case DType::IQ2_XS: return sv_tile<G, BlockIQ2_XS>(wr, a, astride, nb, out, nr, pf);
        case DType::IQ2_S: return sv_tile<G, BlockIQ2_S>(wr, a, astride, nb, out, nr, pf);
        case DType::IQ3_XXS: return sv_tile<G, BlockIQ3_XXS>(wr, a, astride, nb, out, nr, pf);
        case DType::IQ3_S: return sv_tile<G, BlockIQ3_S>(wr, a, astride, nb, out, nr, pf);
        case DType::IQ1_S: return sv_tile<G, BlockIQ1_S>(wr, a, astride, nb, out, nr, pf);
        case DType::IQ1_M: return sv_tile<G, BlockIQ1_M>(wr, a, astride, nb, out, nr, pf);
        default: break;
    }
}
static_assert(kMaxGroup8 == 32, "instantiate every group size up to kMaxGroup8");

#define LS_INSTANTIATE(G)                                                                                              \
    template void iq_tile8<G>(DType, const uint8_t* const*, const uint8_t*, size_t, int64_t, float* const*, int, size_t);
LS_GEMM_GROUPS_8(LS_INSTANTIATE)
#undef LS_INSTANTIATE

}  // namespace ls::cpu::gemm
#endif  // LS_GEMM_AVX2
