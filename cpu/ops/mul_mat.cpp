#include <tbb/blocked_range.h>
#include <tbb/blocked_range2d.h>
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
// increasing i; the same fixed tree), so the bits are dot_canonical's; a block of R rows and T
// tokens loads each weight chunk once for T tokens and each activation chunk once for R rows.
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

template <DType WT, int R, int T>
void float_block(const uint8_t* const* w, const float* const* a, int64_t K, float* const* out /* [T], row r at out[t][r] */) {
    using namespace simd;
    vecf acc[R][T][NR];
    for (auto& x : acc)
        for (auto& y : x)
            for (auto& z : y) z = vzero();
    int64_t i = 0;
    for (; i + 32 <= K; i += 32)
        for (int c = 0; c < NR; ++c) {
            vecf wv[R];
            for (int r = 0; r < R; ++r) wv[r] = wload<WT>(w[r], i + c * VW);
            for (int t = 0; t < T; ++t) {
                const vecf av = vload(a[t] + i + c * VW);
                for (int r = 0; r < R; ++r) acc[r][t][c] = vadd(acc[r][t][c], vmul(wv[r], av));
            }
        }
    const int64_t whole = i;
    for (int r = 0; r < R; ++r)
        for (int t = 0; t < T; ++t) {
            vecf* s = acc[r][t];
            int64_t j = whole;
            for (int c = 0; j + VW <= K; j += VW, ++c) s[c] = vadd(s[c], vmul(wload<WT>(w[r], j), vload(a[t] + j)));
            if (j == K) {
                out[t][r] = tree(s);
                continue;
            }
            alignas(64) float l[32];
            for (int c = 0; c < NR; ++c) vstore(l + c * VW, s[c]);
            for (; j < K; ++j) l[j % 32] = l[j % 32] + wscalar<WT>(w[r], j) * a[t][j];
            out[t][r] = canon_tree(l);
        }
}

template <DType WT>
void mul_mat_float(const Tensor& w, int64_t M, const std::vector<const float*>& xr, const std::vector<float*>& dr) {
    const int64_t K = w.ne[0], N = w.ne[1];
    // F16 weights take F16-rounded activations (vec_dot_ref), held here as the floats they are.
    std::vector<float> act;
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
    constexpr int R = 2, T = 4;
    constexpr int64_t kRows = 32, kTok = 64;
    tbb::parallel_for(tbb::blocked_range2d<int64_t>(0, N, kRows, 0, M, kTok), [&](const tbb::blocked_range2d<int64_t>& b) {
        const int64_t n1 = b.rows().end(), m1 = b.cols().end();
        for (int64_t n = b.rows().begin(); n < n1; n += R) {
            const int nr = int(std::min<int64_t>(R, n1 - n));
            const uint8_t* wr[R];
            for (int r = 0; r < R; ++r) wr[r] = w.row(n + std::min(r, nr - 1));
            for (int64_t m = b.cols().begin(); m < m1; m += T) {
                const int nt = int(std::min<int64_t>(T, m1 - m));
                const float* at[T];
                float res[T][R];
                float* outs[T];
                for (int t = 0; t < T; ++t) at[t] = ar[size_t(m + std::min(t, nt - 1))], outs[t] = res[t];
                if (nr == R && nt == T) float_block<WT, R, T>(wr, at, K, outs);
                else if (nr == R) for (int t = 0; t < nt; ++t) float_block<WT, R, 1>(wr, at + t, K, outs + t);
                else for (int t = 0; t < nt; ++t) float_block<WT, 1, 1>(wr, at + t, K, outs + t);
                for (int t = 0; t < nt; ++t)
                    for (int r = 0; r < nr; ++r) dr[size_t(m + t)][n + r] = res[t][r];
            }
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
