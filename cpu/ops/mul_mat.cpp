#include <tbb/blocked_range.h>
#include <tbb/blocked_range2d.h>
#include <tbb/cache_aligned_allocator.h>
#include <tbb/parallel_for.h>

#include <algorithm>
#include <vector>

#include "core/quant/quant.h"
#include "cpu/ops/cpu_ops.h"
#include "cpu/quant_rows.h"
#include "cpu/simd.h"
#include "cpu/quant_gemm.h"

namespace ls::cpu {

// Types without a tiled kernel. Float weights: canon_dot of the weight row with the activation
// row (core/quant/quant.cpp vec_dot_ref: the activation is F16 for F16 weights, whose products
// are then exact, and F32 otherwise), vectorized in simd.h's 32 lanes. The other quantized types
// use the reference dot itself: exact block sums and the canonical float chain.
float dot_canonical(DType t, const uint8_t* w, const uint8_t* a, int64_t k) {
#if defined(LS_CPU_CANON_SIMD)
    using namespace simd;
    if (t == DType::F32) return simd::canon_dot(reinterpret_cast<const float*>(w), reinterpret_cast<const float*>(a), k);
    if (t == DType::F16 || t == DType::BF16) {
        const auto* wh = reinterpret_cast<const uint16_t*>(w);
        if (t == DType::F16) {
            const auto* ah = reinterpret_cast<const uint16_t*>(a);
            return canon_sum_v(
                k, [&](int64_t i) { return vmul(vload_f16(wh + i), vload_f16(ah + i)); },
                [&](int64_t i) { return fp16_to_fp32(wh[i]) * fp16_to_fp32(ah[i]); });
        }
        const auto* af = reinterpret_cast<const float*>(a);
        return canon_sum_v(
            k, [&](int64_t i) { return vmul(vload_bf16(wh + i), vload(af + i)); },
            [&](int64_t i) { return bf16_to_fp32(wh[i]) * af[i]; });
    }
#endif
    return vec_dot_ref(t, w, a, k);
}

namespace {
// Tiled path (quant_gemm.h): each (row, token) value is computed by the same lane arithmetic
// whatever M is, so a prompt evaluated at once gives the same logits as token by token.
// Up to this many tokens, a mul_mat streams the weights once with every token (decode).
constexpr int64_t kFewTokens = 8;

void mul_mat_tiled(const Tensor& w, int64_t M, const std::vector<const float*>& xr, const std::vector<float*>& dr) {
    const int64_t K = w.ne[0], N = w.ne[1];
    const size_t astride = gemm_act_stride(w.type, K);
    std::vector<uint8_t> aq(size_t(M) * astride);
    tbb::parallel_for(tbb::blocked_range<int64_t>(0, M, 16), [&](const tbb::blocked_range<int64_t>& r) {
        for (int64_t m = r.begin(); m < r.end(); ++m) gemm_prepare_act(w.type, xr[m], aq.data() + m * astride, K);
    });
    const int64_t rows = gemm_rows(w.type, std::min<int64_t>(M, 64));  // weight rows per tile (8 or 16)
    const int64_t groups = (N + rows - 1) / rows;
    if (M <= kFewTokens) {
        // Decode steps (one sequence, or a few decoding together): memory bound, every token
        // against each row group as it streams by (prefetched, gemm_tile); up to ~64 chunks
        // of at least 64 KiB of weights each, so both cores stay busy with little scheduling
        // overhead.
        const int64_t group_bytes = rows * int64_t(w.nb[1]);
        const int64_t grain = std::max<int64_t>({int64_t(1), groups / 64, (int64_t(64) << 10) / group_bytes});
        tbb::parallel_for(tbb::blocked_range<int64_t>(0, groups, grain), [&](const tbb::blocked_range<int64_t>& r) {
            float* outs[kFewTokens];
            for (int64_t gi = r.begin(); gi < r.end(); ++gi) {
                const int64_t n0 = gi * rows;
                for (int64_t j = 0; j < M; ++j) outs[j] = dr[size_t(j)] + n0;
                gemm_tile(w.type, w.row(n0), w.nb[1], int(std::min<int64_t>(rows, N - n0)), aq.data(), astride, int(M), K, outs);
            }
        }, tbb::simple_partitioner());
        return;
    }
    // Tokens in chunks of 64 (their prepared rows stay in L2), weight rows in chunks of 32
    // (one row group stays in L1 while the chunk's tokens pass over it).
    constexpr int64_t kTok = 64;
    const int64_t row_groups = 32 / rows;
    tbb::parallel_for(
        tbb::blocked_range2d<int64_t>(0, groups, row_groups, 0, M, kTok),
        [&](const tbb::blocked_range2d<int64_t>& r) {
            const int64_t m0 = r.cols().begin(), mn = r.cols().end() - m0;
            std::vector<float*> outs(static_cast<size_t>(mn));
            for (int64_t gi = r.rows().begin(); gi < r.rows().end(); ++gi) {
                const int64_t n0 = gi * rows;
                for (int64_t j = 0; j < mn; ++j) outs[size_t(j)] = dr[size_t(m0 + j)] + n0;
                gemm_tile(w.type, w.row(n0), w.nb[1], int(std::min<int64_t>(rows, N - n0)), aq.data() + m0 * astride, astride,
                          int(mn), K, outs.data());
            }
        },
        tbb::simple_partitioner());
}
}  // namespace

#if defined(LS_CPU_CANON_SIMD)
// Float weights (F32, F16, BF16) over many tokens: dot_canonical's arithmetic, register-blocked.
// Each (row, token) keeps its own 32 lane partials (element i to lane i mod 32, added in
// increasing i; the same fixed tree), so the bits are dot_canonical's. The partials of one
// register slice c (lanes c*VW .. c*VW+VW-1) form chains of their own, so a tile of R rows x T
// tokens runs one slice at a time (one register per output) and over K in chunks (its partials
// kept between chunks): neither regroups a lane's additions. Both operands are packed as F32 in
// the order the tile reads them (one stream each, no conversion in the loop): the activations
// once per call, a task's rows once per task; a chunk of a token group's slice (16 KiB) stays
// in L1 while the rows' weights stream past it from L2. From 48 to 70-80 GFLOP/s on one core
// here (AVX-512, F16, K 1024-4096); AVX2 (this file built for Haswell, on the same core), 38 to
// 66-68 with 2 x 6 tiles (2 x 4: 60-67).
// The activations are floats here: F16 weights' F16-rounded activations widened back (exactly).
template <DType WT>
inline simd::vecf wload(const uint8_t* w, int64_t i) {
    using namespace simd;
    if constexpr (WT == DType::F32) return vload(reinterpret_cast<const float*>(w) + i);
    else if constexpr (WT == DType::F16) return vload_f16(reinterpret_cast<const uint16_t*>(w) + i);
    else return vload_bf16(reinterpret_cast<const uint16_t*>(w) + i);
}
template <DType WT>
inline float wscalar(const uint8_t* w, int64_t i) {
    if constexpr (WT == DType::F32) return reinterpret_cast<const float*>(w)[i];
    else if constexpr (WT == DType::F16) return fp16_to_fp32(reinterpret_cast<const uint16_t*>(w)[i]);
    else return bf16_to_fp32(reinterpret_cast<const uint16_t*>(w)[i]);
}

#if defined(__AVX512F__)
constexpr int kTileR = 2, kTileT = 8;  // 16 accumulators of 32 registers
#else
constexpr int kTileR = 2, kTileT = 6;  // 12 accumulators of 16 registers
#endif

// Slice c of an R x T tile over the whole 32-element blocks: w and a packed as
// [j][R or T][VW] (j the 32-element block; F32), the partials out to part[(r * T + t) * 32 + lane].
template <int R, int T>
void float_tile(const float* w, const float* a, int64_t blocks, float* part, int c, bool first) {
    using namespace simd;
    vecf acc[R][T];
    for (int r = 0; r < R; ++r)
        for (int t = 0; t < T; ++t) acc[r][t] = first ? vzero() : vload(part + (r * T + t) * 32 + c * VW);
    for (int64_t j = 0; j < blocks; ++j, w += R * VW, a += T * VW) {
        vecf wv[R];
        for (int r = 0; r < R; ++r) wv[r] = vload(w + r * VW);
        for (int t = 0; t < T; ++t) {
            vecf av = vload(a + t * VW);
            __asm__("" : "+v"(av));  // one load per token, not one per (row, token) folded into the multiplies
            for (int r = 0; r < R; ++r) acc[r][t] = vadd(acc[r][t], vmul(wv[r], av));
        }
    }
    for (int r = 0; r < R; ++r)
        for (int t = 0; t < T; ++t) vstore(part + (r * T + t) * 32 + c * VW, acc[r][t]);
}

// The elements past the last whole 32-block (whole registers, then scalars, to their lanes),
// then the fixed tree.
template <DType WT>
float float_finish(const uint8_t* w, const float* a, int64_t whole, int64_t K, float* l /* 32 lanes */) {
    using namespace simd;
    vecf s[NR];
    for (int c = 0; c < NR; ++c) s[c] = vload(l + c * VW);
    int64_t j = whole;
    for (int c = 0; j + VW <= K; j += VW, ++c) s[c] = vadd(s[c], vmul(wload<WT>(w, j), vload(a + j)));
    if (j == K) return tree(s);
    for (int c = 0; c < NR; ++c) vstore(l + c * VW, s[c]);
    for (; j < K; ++j) l[j % 32] = l[j % 32] + wscalar<WT>(w, j) * a[j];
    return canon_tree(l);
}

#if defined(__AVX512F__)
// The fixed tree (s[l] += s[l + w], w = 16, 8, 4, 2, 1) of 16 outputs' 32 lane partials at
// once (part[o][32]), as vertical adds of shuffled registers instead of a horizontal sum per
// output: every add is one the tree makes, on the same values. out[o] is output o's sum.
inline void tree16(const float* part, float* out) {
    __m512 v[16], x[8], y[4], z[2];
    for (int o = 0; o < 16; ++o) v[o] = _mm512_add_ps(_mm512_load_ps(part + o * 32), _mm512_load_ps(part + o * 32 + 16));  // w = 16
    for (int k = 0; k < 8; ++k)  // w = 8: [a 0-7 | b 0-7] + [a 8-15 | b 8-15]
        x[k] = _mm512_add_ps(_mm512_shuffle_f32x4(v[2 * k], v[2 * k + 1], 0x44), _mm512_shuffle_f32x4(v[2 * k], v[2 * k + 1], 0xEE));
    for (int k = 0; k < 4; ++k)  // w = 4: 128-bit quarters 0 and 2, plus 1 and 3
        y[k] = _mm512_add_ps(_mm512_shuffle_f32x4(x[2 * k], x[2 * k + 1], 0x88), _mm512_shuffle_f32x4(x[2 * k], x[2 * k + 1], 0xDD));
    for (int k = 0; k < 2; ++k)  // w = 2, inside each quarter
        z[k] = _mm512_add_ps(_mm512_shuffle_ps(y[2 * k], y[2 * k + 1], 0x44), _mm512_shuffle_ps(y[2 * k], y[2 * k + 1], 0xEE));
    const __m512 r = _mm512_add_ps(_mm512_shuffle_ps(z[0], z[1], 0x88), _mm512_shuffle_ps(z[0], z[1], 0xDD));  // w = 1
    alignas(64) float l[16];
    _mm512_store_ps(l, r);
    for (int j = 0; j < 4; ++j)  // lane 4j + e holds output 4e + j
        for (int e = 0; e < 4; ++e) out[4 * e + j] = l[4 * j + e];
}
#endif

// Rows (or tokens) [n, n + G) packed for float_tile's slice c: [j][g][VW], the last row standing
// in for those past `end`.
template <DType WT, int G, class RowOf>
void pack_slice(RowOf row, int64_t n, int64_t end, int64_t blocks, int c, float* out) {
    using namespace simd;
    const uint8_t* rows[G];
    for (int g = 0; g < G; ++g) rows[g] = row(std::min(n + g, end - 1));
    for (int64_t j = 0; j < blocks; ++j)
        for (int g = 0; g < G; ++g, out += VW) vstore(out, wload<WT>(rows[g], j * 32 + c * VW));
}

template <DType WT>
void mul_mat_float(const Tensor& w, int64_t M, const std::vector<const float*>& xr, const std::vector<float*>& dr) {
    using simd::NR;
    using simd::VW;
    const int64_t K = w.ne[0], N = w.ne[1];
    // F16 weights take F16-rounded activations (vec_dot_ref), held here as the floats they are.
    // (This buffer and the packed activations are kept by the calling thread from call to call,
    // as ops run one at a time: fresh ones of this size were page-faulted in every time, a
    // sixth of an image encode's time in the kernel zeroing pages.)
    // (References: a thread_local named inside the tasks would be the worker's own.)
    thread_local std::vector<float, tbb::cache_aligned_allocator<float>> act_kept, ap_kept;
    auto& act = act_kept;
    auto& ap = ap_kept;
    std::vector<const float*> ar(xr);
    if (WT == DType::F16) {
        act.resize(size_t(M * K));
        tbb::parallel_for(int64_t(0), M, [&](int64_t m) {
            std::vector<uint16_t> h(static_cast<size_t>(K));
            quantize_row_act(DType::F16, xr[size_t(m)], h.data(), K);
            dequantize_row_fast(DType::F16, h.data(), act.data() + m * K, K);
            ar[size_t(m)] = act.data() + m * K;
        });
    }
    constexpr int R = kTileR, T = kTileT;
    const int64_t blocks = K / 32, whole = blocks * 32;
    // The activations packed once, T tokens per group (the last token standing in for those past M).
    const int64_t groups = (M + T - 1) / T;
    const size_t aslice = size_t(blocks * T * VW), agroup = size_t(NR) * aslice;
    ap.resize(size_t(groups) * agroup);
    auto arow = [&](int64_t t) { return reinterpret_cast<const uint8_t*>(ar[size_t(t)]); };
    tbb::parallel_for(int64_t(0), groups, [&](int64_t g) {
        for (int c = 0; c < NR; ++c) pack_slice<DType::F32, T>(arow, g * T, M, blocks, c, ap.data() + size_t(g) * agroup + size_t(c) * aslice);
    });
    // A task: a block of rows (their weights packed as F32, up to 768 KiB, in L2; more rows a
    // task for a long K, so each token group's activations serve more of them) against up to
    // 256 tokens, T at a time (their packed activations in L1 while the rows' weights stream past).
    const int64_t rows = std::clamp<int64_t>((int64_t(192) << 10) / std::max<int64_t>(K, 1) / R * R, 8, 64);
    constexpr int64_t kGroups = 256 / T, kChunk = 4096 / (T * VW);
    tbb::parallel_for(tbb::blocked_range2d<int64_t>(0, N, rows, 0, groups, kGroups), [&](const tbb::blocked_range2d<int64_t>& b) {
        const int64_t n0 = b.rows().begin(), n1 = b.rows().end(), nb = n1 - n0, npairs = (nb + R - 1) / R;
        thread_local std::vector<float, tbb::cache_aligned_allocator<float>> wp, part;
        // The rows' weights in the order the tiles read them: slice, chunk, row pair, block
        // (one stream through the task).
        const int64_t nchunks = std::max<int64_t>(1, (blocks + kChunk - 1) / kChunk);
        const size_t wchunk = size_t(kChunk * R * VW);
        auto wtile = [&](int c, int64_t ch, int64_t p) { return wp.data() + size_t((c * nchunks + ch) * npairs + p) * wchunk; };
        wp.resize(size_t(NR * nchunks * npairs) * wchunk);
        part.resize(size_t(npairs * R * T * 32));
        for (int64_t p = 0; p < npairs; ++p) {
            const uint8_t* rws[R];
            for (int r = 0; r < R; ++r) rws[r] = w.row(std::min(n0 + p * R + r, n1 - 1));  // (the last row stands in)
            for (int c = 0; c < NR; ++c)
                for (int64_t j = 0; j < blocks; ++j)
                    for (int r = 0; r < R; ++r)
                        simd::vstore(wtile(c, j / kChunk, p) + size_t((j % kChunk) * R + r) * VW, wload<WT>(rws[r], j * 32 + c * VW));
        }
        for (int64_t g = b.cols().begin(); g < b.cols().end(); ++g) {
            const int64_t m = g * T, m1 = std::min(M, m + T);
            // One chunk of one slice of the group's activations (16 KiB) in L1 at a time.
            for (int c = 0; c < NR; ++c)
                for (int64_t j0 = 0; j0 == 0 || j0 < blocks; j0 += kChunk)  // (once with no blocks: zero partials)
                    for (int64_t p = 0; p < npairs; ++p)
                        float_tile<R, T>(wtile(c, j0 / kChunk, p),
                                         ap.data() + size_t(g) * agroup + size_t(c) * aslice + size_t(j0 * T * VW),
                                         std::min(kChunk, blocks - j0), part.data() + p * R * T * 32, c, j0 == 0);
#if defined(__AVX512F__)
            if constexpr (R * T == 16)
                if (whole == K) {  // no elements past the whole blocks: the tree alone, a tile at a time
                    for (int64_t p = 0; p < npairs; ++p) {
                        float res[16];
                        tree16(part.data() + p * R * T * 32, res);
                        for (int r = 0; r < R && n0 + p * R + r < n1; ++r)
                            for (int64_t t = m; t < m1; ++t) dr[size_t(t)][n0 + p * R + r] = res[r * T + (t - m)];
                    }
                    continue;
                }
#endif
            for (int64_t n = n0; n < n1; ++n)
                for (int64_t t = m; t < m1; ++t)
                    dr[size_t(t)][n] = float_finish<WT>(w.row(n), ar[size_t(t)], whole, K,
                                                        part.data() + ((n - n0) * T + (t - m)) * 32);
        }
    }, tbb::simple_partitioner());
}
#endif

// Integer hot path: activations are quantized once to the weight's dot type, then each
// tile of (weight rows x tokens) is computed with the SIMD block dot products.
void mul_mat(const Tensor& dst) {
    const Tensor& w = *dst.src[0];
    const Tensor& x = *dst.src[1];
    const int64_t K = w.ne[0], N = w.ne[1];
    const int64_t M = x.ne[1] * x.ne[2] * x.ne[3];
    std::vector<const float*> xr(static_cast<size_t>(M));
    std::vector<float*> dr(static_cast<size_t>(M));
    for (int64_t m = 0; m < M; ++m) {
        xr[size_t(m)] = reinterpret_cast<const float*>(x.row(m % x.ne[1], (m / x.ne[1]) % x.ne[2], m / (x.ne[1] * x.ne[2])));
        dr[size_t(m)] = reinterpret_cast<float*>(dst.row(m % dst.ne[1], (m / dst.ne[1]) % dst.ne[2], m / (dst.ne[1] * dst.ne[2])));
    }
    if (gemm_supported(w.type)) return mul_mat_tiled(w, M, xr, dr);
#if defined(LS_CPU_CANON_SIMD)
    if (M >= 4 && w.type == DType::F16) return mul_mat_float<DType::F16>(w, M, xr, dr);
    if (M >= 4 && w.type == DType::F32) return mul_mat_float<DType::F32>(w, M, xr, dr);
    if (M >= 4 && w.type == DType::BF16) return mul_mat_float<DType::BF16>(w, M, xr, dr);
#endif

    // Other types: one (row block, token) at a time with the row-blocked dot products.
    const DType at = vec_dot_type(w.type);
    const size_t abytes = row_bytes(at, K);
    std::vector<uint8_t> aq(size_t(M) * abytes);
    tbb::parallel_for(int64_t(0), M, [&](int64_t m) { quantize_row_act(at, xr[size_t(m)], aq.data() + m * abytes, K); });
    constexpr int64_t kRowBlock = 16, kTokBlock = 64;
    tbb::parallel_for(tbb::blocked_range2d<int64_t>(0, (N + kRowBlock - 1) / kRowBlock, 1, 0, M, kTokBlock),
                      [&](const tbb::blocked_range2d<int64_t>& r) {
                          float tmp[kRowBlock];
                          for (int64_t nb = r.rows().begin(); nb < r.rows().end(); ++nb) {
                              const int64_t n0 = nb * kRowBlock, nr = std::min(kRowBlock, N - n0);
                              for (int64_t m = r.cols().begin(); m < r.cols().end(); ++m) {
                                  const uint8_t* a = aq.data() + m * abytes;
                                  for (int64_t i = 0; i < nr; ++i) tmp[i] = dot_canonical(w.type, w.row(n0 + i), a, K);
                                  std::copy(tmp, tmp + nr, dr[size_t(m)] + n0);
                              }
                          }
                      });
}

}  // namespace ls::cpu
