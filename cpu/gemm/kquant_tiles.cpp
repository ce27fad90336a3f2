// The K-quant types (256-element super-blocks: Q2_K..Q6_K) in 8-row tiles: per super-block
// and row, the unpacked values and scale vectors are reused by every token; the 8 rows'
// 8-lane partial sums go through one hadd tree per super-block. (A 512-bit form of these tiles,
// a row's 256 values in four AVX-512 vectors, was slower on an AVX-512 + VNNI EPYC than this
// 256-bit one, which keeps the fused one-token form and the Q4_K/Q6_K lane tiles: Qwen2.5-1.5B-
// shaped Q4_K_M, pp512 88-90 -> 122-126 t/s, tg64 18-19 -> 23 t/s. It was removed.)
#include "cpu/gemm/tiles.h"

#if LS_GEMM_AVX2
#include <cstring>
#include <type_traits>

#include "core/quant/block_access.h"
#include "core/quant/quant_blocks.h"
#include "cpu/gemm/ksum.h"
#include "cpu/gemm/vec256.h"

namespace ls::cpu::gemm {
using namespace ls::qb;

namespace {

// One token (a decode step): each row's unpacked 32-value chunks meet the
// token as they are formed (Fused::put) instead of being stored for tokens that do not come.
// Integer adds in another order give the same exact int32 sums, and the float chain is the
// same, so the results equal the stored form's bit for bit (tests: every tile at M = 1).
template <bool kOn>
struct Fused {
    const int8_t* yq = nullptr;  // the token's Q8_K values (kOn)
    uint8_t* qb = nullptr;       // the row's unpacked values (!kOn)
    __m256i s = _mm256_setzero_si256();
    [[gnu::always_inline]] void put(int j, __m256i u, __m256i sc) {
        // (add + madd, not madd_add: this chain is serial, and dpwssd's latency measured slower.)
        if constexpr (kOn) s = _mm256_add_epi32(s, _mm256_madd_epi16(_mm256_maddubs_epi16(u, loadu(yq + 32 * j)), sc));
        else _mm256_store_si256(reinterpret_cast<__m256i*>(qb + 32 * j), u);
    }
};
template <int G> constexpr bool kFuse = G == 1;
template <int G> const int8_t* fused_y(const uint8_t* a, int64_t i) {
    return kFuse<G> ? reinterpret_cast<const BlockQ8_K*>(a)[i].qs : nullptr;
}

// Q4_K and Q5_K / Q8_K. Per row and super-block: 256 unsigned values in element order (Q4_K's
// nibbles; Q5_K's with their fifth bit from qh, 0..31, so maddubs' pair sums stay below
// 2 * 31 * 128 and exact), 8 int16 scale broadcasts, the mins duplicated per bsum pair. The
// two types share scales, mins and the float combination (core/quant/quant_k.cpp).
template <int G, class Block>
void q45k_tile(const uint8_t* const* wr, const uint8_t* a, size_t astride, int64_t nb, float* const* out, int nr, size_t pf) {
    constexpr bool kQ5 = std::is_same_v<Block, BlockQ5_K>;
    alignas(64) uint8_t qb[8][QK_K];
    __m256i scv[8][8], mnv[8], fused[8];
    __m256 acc[G], macc[G];
    for (int g = 0; g < G; ++g) acc[g] = macc[g] = _mm256_setzero_ps();
    const __m256i m4 = _mm256_set1_epi8(0x0F);
    for (int64_t i = 0; i < nb; ++i) {
        alignas(16) uint16_t dh[8], mh[8];
        for (int r = 0; r < 8; ++r) {
            const Block& b = reinterpret_cast<const Block*>(wr[r])[i];
            std::memcpy(&dh[r], &b.d, 2);
            std::memcpy(&mh[r], &b.dmin, 2);
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
            Fused<kFuse<G>> f{fused_y<G>(a, i), qb[r]};
            for (int j = 0; j < 4; ++j) {
                const __m256i q = loadu(b.qs + 32 * j);
                __m256i lo = _mm256_and_si256(q, m4), hi = _mm256_and_si256(_mm256_srli_epi16(q, 4), m4);
                if constexpr (kQ5) {
                    // Element 32m + l takes bit m of qh[l] as its bit 4: mask the bit, then move
                    // it to bit 4 (a 16-bit shift of one set bit that stays inside its byte).
                    const __m256i hq = loadu(b.qh);
                    const int m0 = 2 * j, m1 = 2 * j + 1;
                    auto bit4 = [&](int m) {
                        const __m256i x = _mm256_and_si256(hq, _mm256_set1_epi8(static_cast<char>(1 << m)));
                        return m <= 4 ? _mm256_slli_epi16(x, 4 - m) : _mm256_srli_epi16(x, m - 4);
                    };
                    lo = _mm256_or_si256(lo, bit4(m0));
                    hi = _mm256_or_si256(hi, bit4(m1));
                }
                f.put(2 * j, lo, scv[r][2 * j]);
                f.put(2 * j + 1, hi, scv[r][2 * j + 1]);
            }
            fused[r] = f.s;
        }
        if (pf) prefetch_group(wr[0] + pf, sizeof(Block), i);
        const __m256 dw = load_d8(dh), dm = load_d8(mh);
        for (int g = 0; g < G; ++g) {
            const BlockQ8_K& y = reinterpret_cast<const BlockQ8_K*>(a + astride * static_cast<size_t>(g))[i];
            const __m256i bs = loadu(y.bsums);
            __m256i v[8], mv[8];
            for (int r = 0; r < 8; ++r) {
                v[r] = kFuse<G> ? fused[r] : ksum256(qb[r], y.qs, scv[r], _mm256_setzero_si256());
                mv[r] = _mm256_madd_epi16(mnv[r], bs);
            }
            float yd;
            std::memcpy(&yd, &y.d, 4);
            const __m256 ydv = _mm256_set1_ps(yd);
            // sum = sum + (d_w * d_a) * isum, msum_f = msum_f + (dmin_w * d_a) * msum: each
            // product rounded, then the sum (core/quant/quant_k.cpp), no fused multiply-add.
            acc[g] = _mm256_add_ps(acc[g], _mm256_mul_ps(_mm256_mul_ps(dw, ydv), _mm256_cvtepi32_ps(hsum8(v))));
            macc[g] = _mm256_add_ps(macc[g], _mm256_mul_ps(_mm256_mul_ps(dm, ydv), _mm256_cvtepi32_ps(hsum8(mv))));
        }
    }
    for (int g = 0; g < G; ++g) store_out(_mm256_sub_ps(acc[g], macc[g]), out[g], nr);
}

// Q4_K / Q8_K for token groups (prompts), rows as lanes: per super-block the 8 rows' nibbles
// are transposed so that w[s][j] lane r holds row r's values 4j..4j+3 of sub-block s, and
// sc[s] / mn[s] lane r row r's scale / min of sub-block s (as two equal int16). A token's 4
// activation bytes broadcast against w[s][j] give all 8 rows' pair sums in one maddubs; the 8
// of a sub-block add in int16 exactly (a pair is at most 2 * 15 * 128 = 3840, 8 pairs 30720),
// then one madd applies the 8 rows' scales. Half the multiplies of the row-by-row form (one
// madd per sub-block and 8 rows instead of per row) and no horizontal sums; the int32 isum and
// msum of each (row, token) are the same exact integers, and the float chain is unchanged.
template <int G>
void q4k_lanes_tile(const uint8_t* const* wr, const uint8_t* a, size_t astride, int64_t nb, float* const* out, int nr, size_t pf) {
    constexpr int T = G < 4 ? G : 4;  // tokens sharing each weight vector load
    alignas(32) __m256i w[8][8], sc[8], mn[8];
    __m256 acc[G], macc[G];
    for (int g = 0; g < G; ++g) acc[g] = macc[g] = _mm256_setzero_ps();
    const __m256i m4 = _mm256_set1_epi8(0x0F);
    for (int64_t i = 0; i < nb; ++i) {
        alignas(16) uint16_t dh[8], mh[8];
        const BlockQ4_K* b[8];
        for (int r = 0; r < 8; ++r) {
            b[r] = reinterpret_cast<const BlockQ4_K*>(wr[r]) + i;
            std::memcpy(&dh[r], &b[r]->d, 2);
            std::memcpy(&mh[r], &b[r]->dmin, 2);
            // 6-bit scales and mins as bytes (same unpacking as k4_scale_min, four at a time).
            uint32_t u[3];
            std::memcpy(u, b[r]->scales, 12);
            const uint32_t lo6 = 0x3F3F3F3Fu, lo4 = 0x0F0F0F0Fu, lo2 = 0x03030303u;
            const uint32_t s03 = u[0] & lo6, m03 = u[1] & lo6;
            const uint32_t s47 = (u[2] & lo4) | (((u[0] >> 6) & lo2) << 4);
            const uint32_t m47 = ((u[2] >> 4) & lo4) | (((u[1] >> 6) & lo2) << 4);
            const __m128i sm = _mm_setr_epi32(static_cast<int>(s03), static_cast<int>(s47), static_cast<int>(m03), static_cast<int>(m47));
            // Row r's 8 scales (then mins) as int32 lanes holding the value in both int16 halves.
            const __m256i s32 = _mm256_cvtepu8_epi32(sm), m32 = _mm256_cvtepu8_epi32(_mm_srli_si128(sm, 8));
            sc[r] = _mm256_or_si256(s32, _mm256_slli_epi32(s32, 16));
            mn[r] = _mm256_or_si256(m32, _mm256_slli_epi32(m32, 16));
        }
        transpose8x8_i32(sc);  // sc[s] lane r: row r's scale s
        transpose8x8_i32(mn);
        // Sub-block 2j: low nibbles of qs[32j..32j+31]; 2j+1: the high ones.
        for (int j = 0; j < 4; ++j) {
            for (int r = 0; r < 8; ++r) w[2 * j][r] = _mm256_and_si256(loadu(b[r]->qs + 32 * j), m4);
            transpose8x8_i32(w[2 * j]);
            for (int r = 0; r < 8; ++r) w[2 * j + 1][r] = _mm256_and_si256(_mm256_srli_epi16(loadu(b[r]->qs + 32 * j), 4), m4);
            transpose8x8_i32(w[2 * j + 1]);
        }
        if (pf) prefetch_group(wr[0] + pf, sizeof(BlockQ4_K), i);
        const __m256 dw = load_d8(dh), dm = load_d8(mh);
        for (int g0 = 0; g0 < G; g0 += T) {
            const BlockQ8_K* y[T];
            for (int t = 0; t < T; ++t) y[t] = reinterpret_cast<const BlockQ8_K*>(a + astride * static_cast<size_t>(g0 + t)) + i;
            __m256i v[T], mv[T];
            for (int t = 0; t < T; ++t) v[t] = mv[t] = _mm256_setzero_si256();
            for (int s = 0; s < 8; ++s) {
                __m256i p[T];
                for (int t = 0; t < T; ++t) p[t] = _mm256_maddubs_epi16(w[s][0], bcast4(y[t]->qs + 32 * s));
                for (int j = 1; j < 8; ++j)
                    for (int t = 0; t < T; ++t) {
                        p[t] = _mm256_add_epi16(p[t], _mm256_maddubs_epi16(w[s][j], bcast4(y[t]->qs + 32 * s + 4 * j)));
                        // Keeps the adds a chain: GCC's reassociation would otherwise form trees
                        // that hold more maddubs results at once and spill them (measured).
                        __asm__("" : "+x"(p[t]));
                    }
                for (int t = 0; t < T; ++t) v[t] = madd_add(v[t], p[t], sc[s]);
            }
            // msum lane r = sum_s min_s * (bsums[2s] + bsums[2s+1]): one madd per sub-block.
            for (int s = 0; s < 8; ++s)
                for (int t = 0; t < T; ++t)
                    mv[t] = madd_add(mv[t], mn[s], bcast4(reinterpret_cast<const int8_t*>(y[t]->bsums + 2 * s)));
            for (int t = 0; t < T; ++t) {
                float yd;
                std::memcpy(&yd, &y[t]->d, 4);
                const __m256 ydv = _mm256_set1_ps(yd);
                // As in q45k_tile: each product rounded, then the sum, no fused multiply-add.
                acc[g0 + t] = _mm256_add_ps(acc[g0 + t], _mm256_mul_ps(_mm256_mul_ps(dw, ydv), _mm256_cvtepi32_ps(v[t])));
                macc[g0 + t] = _mm256_add_ps(macc[g0 + t], _mm256_mul_ps(_mm256_mul_ps(dm, ydv), _mm256_cvtepi32_ps(mv[t])));
            }
        }
    }
    for (int g = 0; g < G; ++g) store_out(_mm256_sub_ps(acc[g], macc[g]), out[g], nr);
}

// Q6_K / Q8_K. Values q in [0, 63] (x = q - 32): sum x*y = sum q*y - 32 * sum_s sc_s * bsum_s.
template <int G>
void q6k_tile(const uint8_t* const* wr, const uint8_t* a, size_t astride, int64_t nb, float* const* out, int nr, size_t pf) {
    alignas(64) uint8_t qb[8][QK_K];
    __m256i scv[8][8], sc32[8], fused[8];
    __m256 acc[G];
    for (int g = 0; g < G; ++g) acc[g] = _mm256_setzero_ps();
    const __m256i m4 = _mm256_set1_epi8(0x0F), m3 = _mm256_set1_epi8(0x03);
    const __m256i m0c = _mm256_set1_epi8(0x0C), m30 = _mm256_set1_epi8(0x30);
    for (int64_t i = 0; i < nb; ++i) {
        alignas(16) uint16_t dh[8];
        for (int r = 0; r < 8; ++r) {
            const BlockQ6_K& b = reinterpret_cast<const BlockQ6_K*>(wr[r])[i];
            std::memcpy(&dh[r], &b.d, 2);
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
            Fused<kFuse<G>> f{fused_y<G>(a, i), qb[r]};
            for (int h = 0; h < 2; ++h) {
                const __m256i l0 = loadu(b.ql + 64 * h), l1 = loadu(b.ql + 64 * h + 32);
                const __m256i hq = loadu(b.qh + 32 * h);
                const int j0 = 4 * h;
                f.put(j0 + 0, _mm256_or_si256(_mm256_and_si256(l0, m4), _mm256_slli_epi16(_mm256_and_si256(hq, m3), 4)), scv[r][j0 + 0]);
                f.put(j0 + 1, _mm256_or_si256(_mm256_and_si256(l1, m4), _mm256_slli_epi16(_mm256_and_si256(hq, m0c), 2)), scv[r][j0 + 1]);
                f.put(j0 + 2, _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l0, 4), m4), _mm256_and_si256(hq, m30)), scv[r][j0 + 2]);
                f.put(j0 + 3, _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l1, 4), m4),
                                                            _mm256_and_si256(_mm256_srli_epi16(hq, 2), m30)), scv[r][j0 + 3]);
            }
            fused[r] = f.s;
        }
        if (pf) prefetch_group(wr[0] + pf, sizeof(BlockQ6_K), i);
        const __m256 dw = load_d8(dh);
        for (int g = 0; g < G; ++g) {
            const BlockQ8_K& y = reinterpret_cast<const BlockQ8_K*>(a + astride * static_cast<size_t>(g))[i];
            const __m256i bs = loadu(y.bsums);
            __m256i v[8];
            for (int r = 0; r < 8; ++r)
                v[r] = _mm256_sub_epi32(kFuse<G> ? fused[r] : ksum256(qb[r], y.qs, scv[r], _mm256_setzero_si256()),
                                        _mm256_madd_epi16(sc32[r], bs));
            float yd;
            std::memcpy(&yd, &y.d, 4);
            acc[g] = _mm256_add_ps(acc[g], _mm256_mul_ps(_mm256_mul_ps(dw, _mm256_set1_ps(yd)), _mm256_cvtepi32_ps(hsum8(v))));
        }
    }
    for (int g = 0; g < G; ++g) store_out(acc[g], out[g], nr);
}
// Q6_K / Q8_K for token groups, rows as lanes as in q4k_lanes_tile: w[c][k] lane r holds row
// r's values 4k..4k+3 of 32-value chunk c (k < 4: sub-block 2c, else 2c + 1), sc[s] lane r row
// r's scale s as two equal int16, c32[k] lane r 32 times row r's scales 2k and 2k + 1. Two
// maddubs add exactly in int16 (a pair is at most 2 * 63 * 128 = 16128), so a sub-block takes
// 4 maddubs and 2 madds for all 8 rows: 104 multiplies per token, row group and super-block
// instead of 136, the same exact isum per (row, token) and the same float chain.
template <int G>
void q6k_lanes_tile(const uint8_t* const* wr, const uint8_t* a, size_t astride, int64_t nb, float* const* out, int nr, size_t pf) {
    constexpr int T = G < 4 ? G : 4;  // tokens sharing each weight vector load
    alignas(32) __m256i w[8][8], sc[16], c32[8];
    __m256 acc[G];
    for (int g = 0; g < G; ++g) acc[g] = _mm256_setzero_ps();
    const __m256i m4 = _mm256_set1_epi8(0x0F), m3 = _mm256_set1_epi8(0x03);
    const __m256i m0c = _mm256_set1_epi8(0x0C), m30 = _mm256_set1_epi8(0x30), lo16 = _mm256_set1_epi32(0xFFFF);
    for (int64_t i = 0; i < nb; ++i) {
        alignas(16) uint16_t dh[8];
        const BlockQ6_K* b[8];
        for (int r = 0; r < 8; ++r) {
            b[r] = reinterpret_cast<const BlockQ6_K*>(wr[r]) + i;
            std::memcpy(&dh[r], &b[r]->d, 2);
            const __m128i s8 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b[r]->scales));
            const __m256i s0 = _mm256_cvtepi8_epi32(s8), s1 = _mm256_cvtepi8_epi32(_mm_srli_si128(s8, 8));
            sc[r] = _mm256_or_si256(_mm256_and_si256(s0, lo16), _mm256_slli_epi32(s0, 16));
            sc[8 + r] = _mm256_or_si256(_mm256_and_si256(s1, lo16), _mm256_slli_epi32(s1, 16));
            c32[r] = _mm256_slli_epi16(_mm256_cvtepi8_epi16(s8), 5);  // |32 * sc| <= 4096 fits int16
        }
        transpose8x8_i32(sc);
        transpose8x8_i32(sc + 8);
        transpose8x8_i32(c32);
        // Chunk 4h + k of each row as in q6k_tile, then rows to lanes.
        for (int h = 0; h < 2; ++h) {
            __m256i* x = w[4 * h];
            for (int r = 0; r < 8; ++r) {
                const __m256i l0 = loadu(b[r]->ql + 64 * h), hq = loadu(b[r]->qh + 32 * h);
                x[r] = _mm256_or_si256(_mm256_and_si256(l0, m4), _mm256_slli_epi16(_mm256_and_si256(hq, m3), 4));
                x[16 + r] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l0, 4), m4), _mm256_and_si256(hq, m30));
            }
            for (int r = 0; r < 8; ++r) {
                const __m256i l1 = loadu(b[r]->ql + 64 * h + 32), hq = loadu(b[r]->qh + 32 * h);
                x[8 + r] = _mm256_or_si256(_mm256_and_si256(l1, m4), _mm256_slli_epi16(_mm256_and_si256(hq, m0c), 2));
                x[24 + r] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l1, 4), m4), _mm256_and_si256(_mm256_srli_epi16(hq, 2), m30));
            }
            for (int k = 0; k < 4; ++k) transpose8x8_i32(x + 8 * k);
        }
        if (pf) prefetch_group(wr[0] + pf, sizeof(BlockQ6_K), i);
        const __m256 dw = load_d8(dh);
        for (int g0 = 0; g0 < G; g0 += T) {
            const BlockQ8_K* y[T];
            for (int t = 0; t < T; ++t) y[t] = reinterpret_cast<const BlockQ8_K*>(a + astride * static_cast<size_t>(g0 + t)) + i;
            __m256i v[T];
            for (int t = 0; t < T; ++t) v[t] = _mm256_setzero_si256();
            for (int c = 0; c < 8; ++c)
                for (int k = 0; k < 8; k += 2)
                    for (int t = 0; t < T; ++t) {
                        const int8_t* yq = y[t]->qs + 32 * c + 4 * k;
                        __m256i p = _mm256_maddubs_epi16(w[c][k], bcast4(yq));
                        p = _mm256_add_epi16(p, _mm256_maddubs_epi16(w[c][k + 1], bcast4(yq + 4)));
                        v[t] = madd_add(v[t], p, sc[2 * c + k / 4]);
                        __asm__("" : "+x"(v[t]));  // a chain, as in q4k_lanes_tile
                    }
            // isum = sum q * y - 32 * sum_s sc_s * bsum_s (exact int32).
            for (int k = 0; k < 8; ++k)
                for (int t = 0; t < T; ++t)
                    v[t] = _mm256_sub_epi32(v[t], _mm256_madd_epi16(c32[k], bcast4(reinterpret_cast<const int8_t*>(y[t]->bsums + 2 * k))));
            for (int t = 0; t < T; ++t) {
                float yd;
                std::memcpy(&yd, &y[t]->d, 4);
                acc[g0 + t] = _mm256_add_ps(acc[g0 + t], _mm256_mul_ps(_mm256_mul_ps(dw, _mm256_set1_ps(yd)), _mm256_cvtepi32_ps(v[t])));
            }
        }
    }
    for (int g = 0; g < G; ++g) store_out(acc[g], out[g], nr);
}

// Q2_K and Q3_K / Q8_K: 16 sub-blocks of 16 with an int16 scale each. Per row and super-block:
// 256 unsigned values u in element order (Q2_K: 0..3; Q3_K: 0..7 with x = u - 4), scv[j] the
// scales of sub-blocks 2j (low 128 bits) and 2j + 1 (high), as for Q6_K. Q2_K subtracts its
// mins (sum_s min_s * bsum_s, like Q4_K's macc); Q3_K its offset (4 * sum_s sc_s * bsum_s,
// like Q6_K's). The same exact integers as core/quant/quant_k.cpp, then its float sequence.
// AVX2 only (every build runs this same code).
template <int G, class Block>
void q23k_tile(const uint8_t* const* wr, const uint8_t* a, size_t astride, int64_t nb, float* const* out, int nr, size_t pf) {
    constexpr bool kQ2 = std::is_same_v<Block, BlockQ2_K>;
    alignas(64) uint8_t qb[8][QK_K];
    __m256i scv[8][8], corr[8], fused[8];  // corr: Q2_K's 16 mins, Q3_K's 16 scales times 4 (int16)
    __m256 acc[G], macc[G];
    for (int g = 0; g < G; ++g) acc[g] = macc[g] = _mm256_setzero_ps();
    const __m256i m3 = _mm256_set1_epi8(0x03), one = _mm256_set1_epi8(0x01);
    for (int64_t i = 0; i < nb; ++i) {
        alignas(16) uint16_t dh[8], mh[8];
        for (int r = 0; r < 8; ++r) {
            const Block& b = reinterpret_cast<const Block*>(wr[r])[i];
            std::memcpy(&dh[r], &b.d, 2);
            alignas(32) int16_t sc[16], cr[16];
            if constexpr (kQ2) {
                std::memcpy(&mh[r], &b.dmin, 2);
                for (int t = 0; t < 16; ++t) sc[t] = int16_t(q2k_scale(b.scales, t)), cr[t] = int16_t(q2k_min(b.scales, t));
            } else {
                for (int t = 0; t < 16; ++t) sc[t] = int16_t(q3k_scale(b.scales, t)), cr[t] = int16_t(4 * sc[t]);
            }
            for (int j = 0; j < 8; ++j) scv[r][j] = _mm256_set_m128i(_mm_set1_epi16(sc[2 * j + 1]), _mm_set1_epi16(sc[2 * j]));
            Fused<kFuse<G>> f{fused_y<G>(a, i), qb[r]};
            [[maybe_unused]] __m256i hm{};
            if constexpr (!kQ2) hm = loadu(b.hmask);
            for (int n = 0; n < 2; ++n) {
                const __m256i q = loadu(b.qs + 32 * n);
                for (int j = 0; j < 4; ++j) {
                    // 2-bit field j of each byte: shifted within 16 bits, then masked to the byte.
                    __m256i u = _mm256_and_si256(_mm256_srli_epi16(q, 2 * j), m3);
                    if constexpr (!kQ2)  // Q3_K: bit 4n + j of hmask[l] is the value's bit 2
                        u = _mm256_or_si256(u, _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(hm, 4 * n + j), one), 2));
                    f.put(4 * n + j, u, scv[r][4 * n + j]);
                }
            }
            fused[r] = f.s;
            corr[r] = _mm256_load_si256(reinterpret_cast<const __m256i*>(cr));
        }
        if (pf) prefetch_group(wr[0] + pf, sizeof(Block), i);
        const __m256 dw = load_d8(dh);
        [[maybe_unused]] const __m256 dm = kQ2 ? load_d8(mh) : _mm256_setzero_ps();
        for (int g = 0; g < G; ++g) {
            const BlockQ8_K& y = reinterpret_cast<const BlockQ8_K*>(a + astride * static_cast<size_t>(g))[i];
            const __m256i bs = loadu(y.bsums);
            __m256i v[8], mv[8];
            for (int r = 0; r < 8; ++r) {
                const __m256i s = kFuse<G> ? fused[r] : ksum256(qb[r], y.qs, scv[r], _mm256_setzero_si256());
                if constexpr (kQ2) {
                    v[r] = s;
                    mv[r] = _mm256_madd_epi16(corr[r], bs);
                } else {
                    v[r] = _mm256_sub_epi32(s, _mm256_madd_epi16(corr[r], bs));
                }
            }
            float yd;
            std::memcpy(&yd, &y.d, 4);
            const __m256 ydv = _mm256_set1_ps(yd);
            acc[g] = _mm256_add_ps(acc[g], _mm256_mul_ps(_mm256_mul_ps(dw, ydv), _mm256_cvtepi32_ps(hsum8(v))));
            if constexpr (kQ2) macc[g] = _mm256_add_ps(macc[g], _mm256_mul_ps(_mm256_mul_ps(dm, ydv), _mm256_cvtepi32_ps(hsum8(mv))));
        }
    }
    for (int g = 0; g < G; ++g) store_out(kQ2 ? _mm256_sub_ps(acc[g], macc[g]) : acc[g], out[g], nr);
}
}  // namespace

template <int G>
void kquant_tile8(DType t, const uint8_t* const* wr, const uint8_t* a, size_t astride, int64_t k, float* const* out, int nr,
                  size_t pf) {
    switch (t) {
        case DType::Q2_K: return q23k_tile<G, BlockQ2_K>(wr, a, astride, k / QK_K, out, nr, pf);
        case DType::Q3_K: return q23k_tile<G, BlockQ3_K>(wr, a, astride, k / QK_K, out, nr, pf);
        case DType::Q4_K:
            if constexpr (G >= 2) return q4k_lanes_tile<G>(wr, a, astride, k / QK_K, out, nr, pf);
            return q45k_tile<G, BlockQ4_K>(wr, a, astride, k / QK_K, out, nr, pf);
        case DType::Q5_K: return q45k_tile<G, BlockQ5_K>(wr, a, astride, k / QK_K, out, nr, pf);
        case DType::Q6_K:
            if constexpr (G >= 2) return q6k_lanes_tile<G>(wr, a, astride, k / QK_K, out, nr, pf);
            return q6k_tile<G>(wr, a, astride, k / QK_K, out, nr, pf);
        default: break;
    }
}
static_assert(kMaxGroup8 == 32, "instantiate every group size up to kMaxGroup8");

#define LS_INSTANTIATE(G)                                                                                              \
    template void kquant_tile8<G>(DType, const uint8_t* const*, const uint8_t*, size_t, int64_t, float* const*, int, size_t);
LS_GEMM_GROUPS_8(LS_INSTANTIATE)
#undef LS_INSTANTIATE

}  // namespace ls::cpu::gemm
#endif  // LS_GEMM_AVX2
