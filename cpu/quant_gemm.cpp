// Tiled quantized matrix products (see quant_gemm.h for the per-lane arithmetic contract).
//
// A call covers 8 weight rows and G tokens; lane r of every vector belongs to row r.
// Legacy types (32-element blocks): per block the 8 rows are unpacked once (to unsigned
// bytes where the type has an offset, so _mm256_maddubs_epi16 takes them as they are) and
// transposed 8x8 in 32-bit units, so vector j holds bytes 4j..4j+3 of each row; a token's
// block is then 8 maddubs with its bytes 4j..4j+3 broadcast, summed lane-wise: the exact block
// sums of the 8 rows with no horizontal reduction. K-quants (256-element super-blocks): per
// super-block and row, the unpacked values and scale vectors are reused by every token; the 8
// rows' 8-lane partial sums go through one hadd tree per super-block. The float part is
// lane-wise, so the value of a lane is the same whatever G is (G = 1 is the generation path).
// With VNNI the legacy block sums come from dpbusd (Q8_0 weights offset to unsigned, like
// Q4_0/Q5_0): the same exact integers, so results do not depend on the instruction set.
#include "cpu/quant_gemm.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "core/quant/quant.h"
#include "core/quant/quant_blocks.h"
#include "cpu/quant_rows.h"

#if defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)
#define LS_GEMM_AVX2 1
#include <immintrin.h>

#include "cpu/avx2_bits.h"
#endif

// VNNI (AVX512-VNNI with VL, or AVX-VNNI): one dpbusd sums four unsigned x signed byte
// products into each 32-bit lane, exactly, with no int16 saturation; it replaces the
// maddubs + madd pairs of the legacy blocks (same exact integer block sums, half the uops).
#if defined(LS_GEMM_AVX2) && ((defined(__AVX512VNNI__) && defined(__AVX512VL__)) || defined(__AVXVNNI__))
#define LS_GEMM_VNNI 1
#else
#define LS_GEMM_VNNI 0
#endif

// AVX-512 with VNNI: the legacy types take 16 weight rows per tile in 512-bit vectors (lane r
// = row r), half the instructions per row and token of the 8-row form.
#if LS_GEMM_VNNI && defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512VL__) && defined(__AVX512VNNI__)
#define LS_GEMM_V512 1
#else
#define LS_GEMM_V512 0
#endif

// AVX-512 BW: the K-quant tiles take a row's 256 unpacked values in four 512-bit vectors
// (two sub-blocks each) instead of eight 256-bit ones; the exact integer sums are the same.
#if defined(LS_GEMM_AVX2) && defined(__AVX512F__) && defined(__AVX512BW__)
#define LS_GEMM_K512 1
#else
#define LS_GEMM_K512 0
#endif

namespace ls::cpu {
using namespace ls::qb;

namespace {
bool is_legacy(DType t) { return t == DType::Q4_0 || t == DType::Q5_0 || t == DType::Q8_0; }
// Legacy types: after the Q8_0 blocks (from a 4-byte aligned offset), the block scales as
// floats, then per block off * (sum of the block's quants), off = 8 (Q4_0), 16 (Q5_0), and for
// Q8_0 0, or 128 with VNNI (its weights are then taken as unsigned x + 128, as dpbusd wants).
int legacy_off(DType t) { return t == DType::Q4_0 ? 8 : t == DType::Q5_0 ? 16 : LS_GEMM_VNNI ? 128 : 0; }
size_t legacy_extra_off(int64_t k) { return (static_cast<size_t>(k / QK) * sizeof(BlockQ8_0) + 3) / 4 * 4; }
size_t act_bytes(DType t, int64_t k) {
    if (is_legacy(t)) return legacy_extra_off(k) + 2 * sizeof(float) * static_cast<size_t>(k / QK);
    return row_bytes(vec_dot_type(t), k);
}
}  // namespace

#if LS_GEMM_AVX2
namespace {
inline __m256i loadu(const void* p) { return _mm256_loadu_si256(static_cast<const __m256i*>(p)); }
inline float h2f(uint16_t h) { return _cvtsh_ss(h); }
inline void prefetch(const uint8_t* p) { _mm_prefetch(reinterpret_cast<const char*>(p), _MM_HINT_T0); }
// Memory-bound products: the 8 rows of a group are contiguous, so while block i of this group
// is computed, prefetch the i-th slice (8 blocks' worth of bytes, whole cache lines) of the
// group starting at `ahead`: one sequential stream instead of 8 interleaved ones.
inline void prefetch_group(const uint8_t* ahead, size_t block_bytes, int64_t i, size_t rows = 8) {
    const size_t per = (rows * block_bytes + 63) / 64 * 64;
    const uint8_t* p = ahead + per * static_cast<size_t>(i);
    for (size_t o = 0; o < per; o += 64) prefetch(p + o);
}

// v[0..7] (8 x int32 each) -> lane r = sum of the 8 lanes of v[r]. Exact (int32).
inline __m256i hsum8(const __m256i* v) {
    const __m256i h01 = _mm256_hadd_epi32(v[0], v[1]), h23 = _mm256_hadd_epi32(v[2], v[3]);
    const __m256i h45 = _mm256_hadd_epi32(v[4], v[5]), h67 = _mm256_hadd_epi32(v[6], v[7]);
    const __m256i a = _mm256_hadd_epi32(h01, h23), b = _mm256_hadd_epi32(h45, h67);
    return _mm256_add_epi32(_mm256_permute2x128_si256(a, b, 0x20), _mm256_permute2x128_si256(a, b, 0x31));
}
// 8 fp16 scales (stride bytes apart, at byte offset off of each block) as floats.
inline __m256 load_d8(const uint16_t* d) { return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(d))); }

inline void store_out(__m256 v, float* out, int nr) {
    if (nr == 8) {
        _mm256_storeu_ps(out, v);
    } else {
        alignas(32) float t[8];
        _mm256_store_ps(t, v);
        std::copy(t, t + nr, out);
    }
}

// 4 bytes at p in every 32-bit lane.
inline __m256i bcast4(const int8_t* p) {
    int32_t v;
    std::memcpy(&v, p, 4);
    return _mm256_set1_epi32(v);
}
// 8x8 transpose of 32-bit elements: afterwards v[j] lane r = old v[r] lane j.
[[gnu::always_inline]] inline void transpose8x8_i32(__m256i* v) {
    __m256i t[8], u[8];
    for (int k = 0; k < 4; ++k) {
        t[2 * k] = _mm256_unpacklo_epi32(v[2 * k], v[2 * k + 1]);
        t[2 * k + 1] = _mm256_unpackhi_epi32(v[2 * k], v[2 * k + 1]);
    }
    for (int k = 0; k < 2; ++k) {
        u[4 * k + 0] = _mm256_unpacklo_epi64(t[4 * k], t[4 * k + 2]);
        u[4 * k + 1] = _mm256_unpackhi_epi64(t[4 * k], t[4 * k + 2]);
        u[4 * k + 2] = _mm256_unpacklo_epi64(t[4 * k + 1], t[4 * k + 3]);
        u[4 * k + 3] = _mm256_unpackhi_epi64(t[4 * k + 1], t[4 * k + 3]);
    }
    // u[j] (j < 4): rows 0-3, element j in the low half and j+4 in the high; u[4+j]: rows 4-7.
    for (int j = 0; j < 4; ++j) {
        v[j] = _mm256_permute2x128_si256(u[j], u[4 + j], 0x20);
        v[j + 4] = _mm256_permute2x128_si256(u[j], u[4 + j], 0x31);
    }
}

// Legacy decoders: u = unsigned value with x = u - kOff (kOff 0: signed Q8_0, sign trick).
struct LQ4_0 {
    using Block = BlockQ4_0;
    static constexpr int kOff = 8;
    static __m256i dec(const Block& b) { return nibbles16(b.qs); }
};
struct LQ5_0 {
    using Block = BlockQ5_0;
    static constexpr int kOff = 16;
    static __m256i dec(const Block& b) {
        return _mm256_or_si256(nibbles16(b.qs), _mm256_and_si256(bits_to_bytes(b.qh), _mm256_set1_epi8(0x10)));
    }
};
struct LQ8_0 {
    using Block = BlockQ8_0;
#if LS_GEMM_VNNI
    static constexpr int kOff = 128;  // x + 128 = x with the sign bit flipped
    static __m256i dec(const Block& b) { return _mm256_xor_si256(loadu(b.qs), _mm256_set1_epi8(static_cast<char>(0x80))); }
#else
    static constexpr int kOff = 0;
    static __m256i dec(const Block& b) { return loadu(b.qs); }
#endif
};

#if LS_GEMM_VNNI
[[gnu::always_inline]] inline __m256i dpbusd(__m256i acc, __m256i u, __m256i s) {
#if defined(__AVX512VNNI__) && defined(__AVX512VL__)
    return _mm256_dpbusd_epi32(acc, u, s);
#else
    return _mm256_dpbusd_avx_epi32(acc, u, s);
#endif
}
#endif

template <class D, int G>
void legacy_tile(const uint8_t* const* wr, const uint8_t* a, size_t astride, size_t extra_off, int64_t nb,
                 float* const* out, int nr, size_t pf) {
    using Block = typename D::Block;
    [[maybe_unused]] const __m256i ones = _mm256_set1_epi16(1);
    __m256 acc[G];
    for (int g = 0; g < G; ++g) acc[g] = _mm256_setzero_ps();
    for (int64_t i = 0; i < nb; ++i) {
        __m256i q[8];
        [[maybe_unused]] __m256i s8[8];
        alignas(16) uint16_t dh[8];
        for (int r = 0; r < 8; ++r) {
            const Block& b = reinterpret_cast<const Block*>(wr[r])[i];
            std::memcpy(&dh[r], &b.d, 2);
            q[r] = D::dec(b);
        }
        if (pf) prefetch_group(wr[0] + pf, sizeof(Block), i);
        const __m256 dw = load_d8(dh);
        transpose8x8_i32(q);  // q[j] lane r = bytes 4j..4j+3 of row r
        if constexpr (D::kOff == 0)
            for (int j = 0; j < 8; ++j) {
                s8[j] = q[j];
                q[j] = _mm256_sign_epi8(q[j], q[j]);  // |x| (as unsigned: -128 -> 128)
            }
        // Tokens in sub-groups of up to 4, the block's 8 vectors in the outer loop: 4 token
        // sums + the two weight vectors of step j stay in registers (16 ymm on AVX2).
        constexpr int S = G < 4 ? G : 4;
        for (int g0 = 0; g0 < G; g0 += S) {
            const int8_t* yq[S];
            __m256i s[S];
            for (int g = 0; g < S; ++g) {
                const uint8_t* ag = a + astride * static_cast<size_t>(g0 + g);
                yq[g] = reinterpret_cast<const BlockQ8_0*>(ag)[i].qs;
            }
#if LS_GEMM_VNNI
            // u in [0, 255], y in [-127, 127]: each lane sums 4 products exactly (the offset
            // is taken off below). Fewer than 4 tokens: 2 or 4 chains per token, so that
            // dpbusd's latency overlaps.
            constexpr int C = S == 1 ? 4 : S < 4 ? 2 : 1;
            __m256i c[C][S];
            for (int h = 0; h < C; ++h)
                for (int g = 0; g < S; ++g) c[h][g] = _mm256_setzero_si256();
            for (int j = 0; j < 8; j += C)
                for (int h = 0; h < C; ++h)
                    for (int g = 0; g < S; ++g) c[h][g] = dpbusd(c[h][g], q[j + h], bcast4(yq[g] + 4 * (j + h)));
            for (int g = 0; g < S; ++g) {
                s[g] = c[0][g];
                for (int h = 1; h < C; ++h) s[g] = _mm256_add_epi32(s[g], c[h][g]);
            }
#else
            if constexpr (D::kOff == 0) {
                // Signed: |x| * (y * sign x); a pair reaches 2*128*127, so widen each product.
                for (int g = 0; g < S; ++g) s[g] = _mm256_setzero_si256();
                for (int j = 0; j < 8; ++j)
                    for (int g = 0; g < S; ++g)
                        s[g] = _mm256_add_epi32(s[g], _mm256_madd_epi16(_mm256_maddubs_epi16(q[j], _mm256_sign_epi8(bcast4(yq[g] + 4 * j), s8[j])), ones));
            } else {
                // Rows are lanes: q[j] times 4 activation bytes broadcast. u <= 31, so a maddubs
                // pair is at most 2*31*127 = 7874 in magnitude and four of them fit int16.
                for (int g = 0; g < S; ++g) s[g] = _mm256_setzero_si256();
                for (int k = 0; k < 2; ++k) {
                    __m256i t[S];
                    for (int g = 0; g < S; ++g) t[g] = _mm256_maddubs_epi16(q[4 * k], bcast4(yq[g] + 16 * k));
                    for (int j = 1; j < 4; ++j)
                        for (int g = 0; g < S; ++g)
                            t[g] = _mm256_add_epi16(t[g], _mm256_maddubs_epi16(q[4 * k + j], bcast4(yq[g] + 16 * k + 4 * j)));
                    for (int g = 0; g < S; ++g) s[g] = _mm256_add_epi32(s[g], _mm256_madd_epi16(t[g], ones));
                }
            }
#endif
            for (int g = 0; g < S; ++g) {
                const uint8_t* ag = a + astride * static_cast<size_t>(g0 + g);
                const float* yd = reinterpret_cast<const float*>(ag + extra_off);
                const int32_t* ybias = reinterpret_cast<const int32_t*>(yd + nb);
                // x = u - off: subtract off * (sum of the block's activation quants).
                if constexpr (D::kOff != 0) s[g] = _mm256_sub_epi32(s[g], _mm256_set1_epi32(ybias[i]));
                const __m256 sc = _mm256_mul_ps(dw, _mm256_set1_ps(yd[i]));
                acc[g0 + g] = _mm256_fmadd_ps(sc, _mm256_cvtepi32_ps(s[g]), acc[g0 + g]);
            }
        }
    }
    for (int g = 0; g < G; ++g) store_out(acc[g], out[g], nr);
}

#if LS_GEMM_V512
// The legacy tile with 16 rows: each row decoded to unsigned bytes as above, the two 8-row
// halves transposed as above and joined, so that vector j lane r = bytes 4j..4j+3 of row r.
// Per lane the same exact integer sum and the same float operations as the 8-row form.
template <class D, int G>
void legacy_tile16(const uint8_t* const* wr, const uint8_t* a, size_t astride, size_t extra_off, int64_t nb,
                   float* const* out, int nr, size_t pf) {
    using Block = typename D::Block;
    __m512 acc[G];
    for (int g = 0; g < G; ++g) acc[g] = _mm512_setzero_ps();
    for (int64_t i = 0; i < nb; ++i) {
        __m256i q[16];
        alignas(32) uint16_t dh[16];
        for (int r = 0; r < 16; ++r) {
            const Block& b = reinterpret_cast<const Block*>(wr[r])[i];
            std::memcpy(&dh[r], &b.d, 2);
            q[r] = D::dec(b);
        }
        if (pf) prefetch_group(wr[0] + pf, sizeof(Block), i, 16);
        const __m512 dw = _mm512_cvtph_ps(_mm256_load_si256(reinterpret_cast<const __m256i*>(dh)));
        transpose8x8_i32(q);
        transpose8x8_i32(q + 8);
        __m512i z[8];
        for (int j = 0; j < 8; ++j) z[j] = _mm512_inserti64x4(_mm512_castsi256_si512(q[j]), q[8 + j], 1);
        constexpr int S = G < 4 ? G : 4;
        for (int g0 = 0; g0 < G; g0 += S) {
            const int8_t* yq[S];
            for (int g = 0; g < S; ++g) yq[g] = reinterpret_cast<const BlockQ8_0*>(a + astride * static_cast<size_t>(g0 + g))[i].qs;
            constexpr int C = S == 1 ? 4 : S < 4 ? 2 : 1;  // independent chains, as in legacy_tile
            __m512i c[C][S];
            for (int h = 0; h < C; ++h)
                for (int g = 0; g < S; ++g) c[h][g] = _mm512_setzero_si512();
            for (int j = 0; j < 8; j += C)
                for (int h = 0; h < C; ++h)
                    for (int g = 0; g < S; ++g) {
                        int32_t y4;
                        std::memcpy(&y4, yq[g] + 4 * (j + h), 4);
                        c[h][g] = _mm512_dpbusd_epi32(c[h][g], z[j + h], _mm512_set1_epi32(y4));
                    }
            for (int g = 0; g < S; ++g) {
                __m512i sg = c[0][g];
                for (int h = 1; h < C; ++h) sg = _mm512_add_epi32(sg, c[h][g]);
                const uint8_t* ag = a + astride * static_cast<size_t>(g0 + g);
                const float* yd = reinterpret_cast<const float*>(ag + extra_off);
                const int32_t* ybias = reinterpret_cast<const int32_t*>(yd + nb);
                sg = _mm512_sub_epi32(sg, _mm512_set1_epi32(ybias[i]));
                const __m512 sc = _mm512_mul_ps(dw, _mm512_set1_ps(yd[i]));
                acc[g0 + g] = _mm512_fmadd_ps(sc, _mm512_cvtepi32_ps(sg), acc[g0 + g]);
            }
        }
    }
    const __mmask16 keep = static_cast<__mmask16>((1u << nr) - 1);
    for (int g = 0; g < G; ++g) _mm512_mask_storeu_ps(out[g], keep, acc[g]);
}

template <int G>
void run_tile16(DType t, const uint8_t* const* wr, const uint8_t* a, size_t astride, int64_t k, float* const* out, int nr, size_t pf) {
    const size_t extra_off = legacy_extra_off(k);
    switch (t) {
        case DType::Q4_0: return legacy_tile16<LQ4_0, G>(wr, a, astride, extra_off, k / QK, out, nr, pf);
        case DType::Q5_0: return legacy_tile16<LQ5_0, G>(wr, a, astride, extra_off, k / QK, out, nr, pf);
        case DType::Q8_0: return legacy_tile16<LQ8_0, G>(wr, a, astride, extra_off, k / QK, out, nr, pf);
        default: break;
    }
}
#endif

#if LS_GEMM_K512
// Row r's sum over a super-block: sum_m madd(maddubs(qb[64m..], y[64m..]), sc[m]) in 16
// lanes, folded to 8 (exact int32 adds). sc[m] holds the int16 scales of 256-bit halves 2m
// and 2m+1 (their ymm forms side by side).
[[gnu::always_inline]] inline __m256i ksum512(const uint8_t* qb, const __m512i* y4, const __m512i* sc, __m512i s) {
    for (int m = 0; m < 4; ++m) {
        const __m512i p = _mm512_maddubs_epi16(_mm512_load_si512(qb + 64 * m), y4[m]);
        s = _mm512_add_epi32(s, _mm512_madd_epi16(p, sc[m]));
    }
    return _mm256_add_epi32(_mm512_castsi512_si256(s), _mm512_extracti64x4_epi64(s, 1));
}
[[gnu::always_inline]] inline void join_scales(const __m256i* scv, __m512i* scz) {
    for (int m = 0; m < 4; ++m) scz[m] = _mm512_inserti64x4(_mm512_castsi256_si512(scv[2 * m]), scv[2 * m + 1], 1);
}
#endif

// Q4_K / Q8_K. Per row and super-block: 256 unsigned nibbles in element order, 8 int16 scale
// broadcasts, the mins duplicated per bsum pair.
template <int G>
void q4k_tile(const uint8_t* const* wr, const uint8_t* a, size_t astride, int64_t nb, float* const* out, int nr, size_t pf) {
    alignas(64) uint8_t qb[8][QK_K];
    __m256i scv[8][8], mnv[8];
#if LS_GEMM_K512
    __m512i scz[8][4];
#endif
    __m256 acc[G], macc[G];
    for (int g = 0; g < G; ++g) acc[g] = macc[g] = _mm256_setzero_ps();
    const __m256i m4 = _mm256_set1_epi8(0x0F);
    for (int64_t i = 0; i < nb; ++i) {
        alignas(16) uint16_t dh[8], mh[8];
        for (int r = 0; r < 8; ++r) {
            const BlockQ4_K& b = reinterpret_cast<const BlockQ4_K*>(wr[r])[i];
            std::memcpy(&dh[r], &b.d, 2);
            std::memcpy(&mh[r], &b.dmin, 2);
            for (int j = 0; j < 4; ++j) {
                const __m256i q = loadu(b.qs + 32 * j);
                _mm256_store_si256(reinterpret_cast<__m256i*>(qb[r] + 64 * j), _mm256_and_si256(q, m4));
                _mm256_store_si256(reinterpret_cast<__m256i*>(qb[r] + 64 * j + 32), _mm256_and_si256(_mm256_srli_epi16(q, 4), m4));
            }
            // 6-bit scales and mins as bytes (same unpacking as k4_scale_min, four at a time).
            uint32_t u[3];
            std::memcpy(u, b.scales, 12);
            const uint32_t lo6 = 0x3F3F3F3Fu, lo4 = 0x0F0F0F0Fu, lo2 = 0x03030303u;
            const uint32_t s03 = u[0] & lo6, m03 = u[1] & lo6;
            const uint32_t s47 = (u[2] & lo4) | (((u[0] >> 6) & lo2) << 4);
            const uint32_t m47 = ((u[2] >> 4) & lo4) | (((u[1] >> 6) & lo2) << 4);
            const __m128i sm = _mm_setr_epi32(static_cast<int>(s03), static_cast<int>(s47), static_cast<int>(m03), static_cast<int>(m47));
            // int16 scales 0..7 in both halves; a byte shuffle broadcasts scale j.
            const __m256i scw = _mm256_broadcastsi128_si256(_mm_cvtepu8_epi16(sm));
            for (int j = 0; j < 8; ++j) scv[r][j] = _mm256_shuffle_epi8(scw, _mm256_set1_epi16(static_cast<short>(0x0100 + 0x0202 * j)));
            // mins duplicated (m0 m0 m1 m1 ... m7 m7) to pair with the 16 bsums.
            mnv[r] = _mm256_cvtepu8_epi16(_mm_shuffle_epi8(sm, _mm_setr_epi8(8, 8, 9, 9, 10, 10, 11, 11, 12, 12, 13, 13, 14, 14, 15, 15)));
        }
        if (pf) prefetch_group(wr[0] + pf, sizeof(BlockQ4_K), i);
        const __m256 dw = load_d8(dh), dm = load_d8(mh);
#if LS_GEMM_K512
        for (int r = 0; r < 8; ++r) join_scales(scv[r], scz[r]);
#endif
        for (int g = 0; g < G; ++g) {
            const BlockQ8_K& y = reinterpret_cast<const BlockQ8_K*>(a + astride * static_cast<size_t>(g))[i];
            const __m256i bs = loadu(y.bsums);
            __m256i v[8], mv[8];
#if LS_GEMM_K512
            __m512i y4[4];
            for (int m = 0; m < 4; ++m) y4[m] = _mm512_loadu_si512(y.qs + 64 * m);
            for (int r = 0; r < 8; ++r) {
                v[r] = ksum512(qb[r], y4, scz[r], _mm512_setzero_si512());
                mv[r] = _mm256_madd_epi16(mnv[r], bs);
            }
#else
            for (int r = 0; r < 8; ++r) {
                __m256i s = _mm256_setzero_si256();
                for (int j = 0; j < 8; ++j) {
                    const __m256i p = _mm256_maddubs_epi16(_mm256_load_si256(reinterpret_cast<const __m256i*>(qb[r] + 32 * j)),
                                                           loadu(y.qs + 32 * j));
                    s = _mm256_add_epi32(s, _mm256_madd_epi16(p, scv[r][j]));
                }
                v[r] = s;
                mv[r] = _mm256_madd_epi16(mnv[r], bs);
            }
#endif
            float yd;
            std::memcpy(&yd, &y.d, 4);
            const __m256 ydv = _mm256_set1_ps(yd);
            acc[g] = _mm256_fmadd_ps(_mm256_mul_ps(dw, ydv), _mm256_cvtepi32_ps(hsum8(v)), acc[g]);
            macc[g] = _mm256_fmadd_ps(_mm256_mul_ps(dm, ydv), _mm256_cvtepi32_ps(hsum8(mv)), macc[g]);
        }
    }
    for (int g = 0; g < G; ++g) store_out(_mm256_sub_ps(acc[g], macc[g]), out[g], nr);
}

// Q6_K / Q8_K. Values q in [0, 63] (x = q - 32): sum x*y = sum q*y - 32 * sum_s sc_s * bsum_s.
template <int G>
void q6k_tile(const uint8_t* const* wr, const uint8_t* a, size_t astride, int64_t nb, float* const* out, int nr, size_t pf) {
    alignas(64) uint8_t qb[8][QK_K];
    __m256i scv[8][8], sc32[8];
#if LS_GEMM_K512
    __m512i scz[8][4];
#endif
    __m256 acc[G];
    for (int g = 0; g < G; ++g) acc[g] = _mm256_setzero_ps();
    const __m256i m4 = _mm256_set1_epi8(0x0F), m3 = _mm256_set1_epi8(0x03);
    const __m256i m0c = _mm256_set1_epi8(0x0C), m30 = _mm256_set1_epi8(0x30);
    for (int64_t i = 0; i < nb; ++i) {
        alignas(16) uint16_t dh[8];
        for (int r = 0; r < 8; ++r) {
            const BlockQ6_K& b = reinterpret_cast<const BlockQ6_K*>(wr[r])[i];
            std::memcpy(&dh[r], &b.d, 2);
            for (int h = 0; h < 2; ++h) {
                const __m256i l0 = loadu(b.ql + 64 * h), l1 = loadu(b.ql + 64 * h + 32);
                const __m256i hq = loadu(b.qh + 32 * h);
                auto* dst = reinterpret_cast<__m256i*>(qb[r] + 128 * h);
                _mm256_store_si256(dst + 0, _mm256_or_si256(_mm256_and_si256(l0, m4), _mm256_slli_epi16(_mm256_and_si256(hq, m3), 4)));
                _mm256_store_si256(dst + 1, _mm256_or_si256(_mm256_and_si256(l1, m4), _mm256_slli_epi16(_mm256_and_si256(hq, m0c), 2)));
                _mm256_store_si256(dst + 2, _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l0, 4), m4), _mm256_and_si256(hq, m30)));
                _mm256_store_si256(dst + 3, _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l1, 4), m4),
                                                            _mm256_and_si256(_mm256_srli_epi16(hq, 2), m30)));
            }
            const __m128i s8 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b.scales));
            sc32[r] = _mm256_slli_epi16(_mm256_cvtepi8_epi16(s8), 5);  // |32 * sc| <= 4096 fits int16
            // scv[j]: scale 2j in the low half, 2j+1 in the high half (int16 broadcasts).
            const __m256i w0 = _mm256_broadcastsi128_si256(_mm_cvtepi8_epi16(s8));
            const __m256i w1 = _mm256_broadcastsi128_si256(_mm_cvtepi8_epi16(_mm_srli_si128(s8, 8)));
            for (int j = 0; j < 8; ++j) {
                const int k = j & 3;
                const __m256i pick = _mm256_setr_epi8(4 * k, 4 * k + 1, 4 * k, 4 * k + 1, 4 * k, 4 * k + 1, 4 * k, 4 * k + 1, 4 * k,
                                                      4 * k + 1, 4 * k, 4 * k + 1, 4 * k, 4 * k + 1, 4 * k, 4 * k + 1, 4 * k + 2,
                                                      4 * k + 3, 4 * k + 2, 4 * k + 3, 4 * k + 2, 4 * k + 3, 4 * k + 2, 4 * k + 3,
                                                      4 * k + 2, 4 * k + 3, 4 * k + 2, 4 * k + 3, 4 * k + 2, 4 * k + 3, 4 * k + 2, 4 * k + 3);
                scv[r][j] = _mm256_shuffle_epi8(j < 4 ? w0 : w1, pick);
            }
        }
        if (pf) prefetch_group(wr[0] + pf, sizeof(BlockQ6_K), i);
        const __m256 dw = load_d8(dh);
#if LS_GEMM_K512
        for (int r = 0; r < 8; ++r) join_scales(scv[r], scz[r]);
#endif
        for (int g = 0; g < G; ++g) {
            const BlockQ8_K& y = reinterpret_cast<const BlockQ8_K*>(a + astride * static_cast<size_t>(g))[i];
            const __m256i bs = loadu(y.bsums);
            __m256i v[8];
#if LS_GEMM_K512
            __m512i y4[4];
            for (int m = 0; m < 4; ++m) y4[m] = _mm512_loadu_si512(y.qs + 64 * m);
            for (int r = 0; r < 8; ++r)
                v[r] = _mm256_sub_epi32(ksum512(qb[r], y4, scz[r], _mm512_setzero_si512()), _mm256_madd_epi16(sc32[r], bs));
#else
            for (int r = 0; r < 8; ++r) {
                __m256i s = _mm256_sub_epi32(_mm256_setzero_si256(), _mm256_madd_epi16(sc32[r], bs));
                for (int j = 0; j < 8; ++j) {
                    const __m256i p = _mm256_maddubs_epi16(_mm256_load_si256(reinterpret_cast<const __m256i*>(qb[r] + 32 * j)),
                                                           loadu(y.qs + 32 * j));
                    s = _mm256_add_epi32(s, _mm256_madd_epi16(p, scv[r][j]));
                }
                v[r] = s;
            }
#endif
            float yd;
            std::memcpy(&yd, &y.d, 4);
            acc[g] = _mm256_fmadd_ps(_mm256_mul_ps(dw, _mm256_set1_ps(yd)), _mm256_cvtepi32_ps(hsum8(v)), acc[g]);
        }
    }
    for (int g = 0; g < G; ++g) store_out(acc[g], out[g], nr);
}

template <int G>
void run_tile(DType t, const uint8_t* const* wr, const uint8_t* a, size_t astride, int64_t k, float* const* out, int nr, size_t pf) {
    const size_t extra_off = legacy_extra_off(k);
    switch (t) {
        case DType::Q4_0: return legacy_tile<LQ4_0, G>(wr, a, astride, extra_off, k / QK, out, nr, pf);
        case DType::Q5_0: return legacy_tile<LQ5_0, G>(wr, a, astride, extra_off, k / QK, out, nr, pf);
        case DType::Q8_0: return legacy_tile<LQ8_0, G>(wr, a, astride, extra_off, k / QK, out, nr, pf);
        case DType::Q4_K: return q4k_tile<G>(wr, a, astride, k / QK_K, out, nr, pf);
        case DType::Q6_K: return q6k_tile<G>(wr, a, astride, k / QK_K, out, nr, pf);
        default: break;
    }
}
}  // namespace
#endif  // LS_GEMM_AVX2

#if LS_GEMM_AVX2
namespace {
// Calls run.template operator()<G>(first) over the ntok tokens: groups of Max, then at most
// one group each of Max/2, ..., 1 (the tile sizes the kernels are instantiated for).
template <int G, class Run> void token_groups_tail(int& g, int ntok, Run& run) {
    if (g + G <= ntok) {
        run.template operator()<G>(g);
        g += G;
    }
    if constexpr (G > 1) token_groups_tail<G / 2>(g, ntok, run);
}
template <int Max, class Run> void by_token_groups(int ntok, Run run) {
    int g = 0;
    for (; g + Max <= ntok; g += Max) run.template operator()<Max>(g);
    token_groups_tail<Max / 2>(g, ntok, run);
}
}  // namespace
#endif

bool gemm_supported(DType t) {
#if LS_GEMM_AVX2
    return is_legacy(t) || t == DType::Q4_K || t == DType::Q6_K;
#else
    (void)t;
    return false;
#endif
}

// 16-row tiles pay off where the tokens are many (prompts); decode steps (up to 8 tokens)
// stream weights faster in 8-row tiles (measured: 4 sequences' decode 6% slower with 16).
int gemm_rows(DType t, int64_t ntok) { return LS_GEMM_V512 && is_legacy(t) && ntok > 8 ? 16 : 8; }

size_t gemm_act_stride(DType t, int64_t k) { return (act_bytes(t, k) + 63) / 64 * 64; }

void gemm_prepare_act(DType t, const float* x, uint8_t* dst, int64_t k) {
    const DType at = vec_dot_type(t);
    quantize_row_act(at, x, dst, k);
    if (is_legacy(t)) {
        const auto* b = reinterpret_cast<const BlockQ8_0*>(dst);
        const int64_t nb = k / QK;
        float* d = reinterpret_cast<float*>(dst + legacy_extra_off(k));
        int32_t* bias = reinterpret_cast<int32_t*>(d + nb);
        const int off = legacy_off(t);
        for (int64_t i = 0; i < nb; ++i) {
            int32_t s = 0;
            for (int j = 0; j < QK; ++j) s += b[i].qs[j];
            uint16_t h;
            std::memcpy(&h, &b[i].d, 2);
            d[i] = fp16_to_fp32(h);
            bias[i] = off * s;
        }
    }
}

void gemm_tile(DType t, const uint8_t* w, size_t wstride, int nr, const uint8_t* a, size_t astride, int ntok,
               int64_t k, float* const* out) {
    // Validates k against the block size (throws); cheap test first, this runs per row group.
    if (!gemm_supported(t) || k <= 0 || k % (is_legacy(t) ? QK : QK_K) != 0) row_bytes(t, k);
#if LS_GEMM_V512
    if (is_legacy(t) && nr >= 1 && nr <= 16 && ntok > 8) {
        const uint8_t* wr[16];
        for (int r = 0; r < 16; ++r) wr[r] = w + wstride * static_cast<size_t>(std::min(r, nr - 1));
        // Compute bound here (more than 8 tokens): no prefetch.
        by_token_groups<64>(ntok, [&]<int G>(int g) {
            run_tile16<G>(t, wr, a + astride * static_cast<size_t>(g), astride, k, out + g, nr, 0);
        });
        return;
    }
#endif
    if (nr > 8 && nr <= 16) {  // two 8-row tiles
        std::vector<float*> hi(out, out + ntok);
        for (float*& o : hi) o += 8;
        gemm_tile(t, w, wstride, 8, a, astride, ntok, k, out);
        gemm_tile(t, w + 8 * wstride, wstride, nr - 8, a, astride, ntok, k, hi.data());
        return;
    }
#if LS_GEMM_AVX2
    if (gemm_supported(t) && nr >= 1 && nr <= 8) {
        // Missing rows repeat the last one (lanes are independent; their results are dropped).
        const uint8_t* wr[8];
        for (int r = 0; r < 8; ++r) wr[r] = w + wstride * static_cast<size_t>(std::min(r, nr - 1));
        // Up to 8 tokens (decode steps): memory bound; prefetch the row group 16 rows further
        // on (callers walk row groups in memory order), a slice per block (prefetch_group).
        const size_t pf = ntok <= 8 ? 16 * wstride : 0;
        by_token_groups<32>(ntok, [&]<int G>(int g) {
            run_tile<G>(t, wr, a + astride * static_cast<size_t>(g), astride, k, out + g, nr, pf);
        });
        return;
    }
#endif
    for (int g = 0; g < ntok; ++g)
        for (int r = 0; r < nr; ++r)
            out[g][r] = vec_dot_ref(t, w + wstride * static_cast<size_t>(r), a + astride * static_cast<size_t>(g), k);
}

}  // namespace ls::cpu
