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
