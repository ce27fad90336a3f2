#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "core/rules/attention_rule.h"
#include "core/ir/op_params.h"
#include "cpu/ops/cpu_ops.h"
#include "cpu/quant_rows.h"
#include "cpu/simd.h"

#if defined(__AVX2__)
#include <immintrin.h>
#endif

namespace ls::cpu {
namespace {

constexpr int64_t kQueryBlock = 64;

// The K/V rows of key positions [lo, hi] of one slot and kv head, dequantized once and
// shared by a block of queries. Rows are fetched by position through the ring rule; a
// position whose row was since overwritten is never read by a query it is visible to
// (that is the ring's headroom guarantee), so the copy is as good as the cache.
struct KeyBlock {
    int64_t lo = 0, hi = -1;
    std::vector<double> k;  // widened once here, so scores need no conversions (det_dot)
    std::vector<float> v;
    void load(const Tensor& kt, const Tensor& vt, int64_t s, int64_t R, int64_t hk, int64_t Dk, int64_t Dv) {
        const int64_t n = hi - lo + 1;
        k.resize(size_t(n * Dk));
        v.resize(size_t(n * Dv));
        // Rows are independent: long ranges (decode at long context) load in parallel.
        tbb::parallel_for(tbb::blocked_range<int64_t>(lo, hi + 1, 256), [&](const tbb::blocked_range<int64_t>& r) {
            std::vector<float> row(size_t(std::max(kt.ne[0], vt.ne[0])));
            for (int64_t kp = r.begin(); kp < r.end(); ++kp) {
                const int64_t rr = ring_row(s, kp, R);
                dequantize_row_fast(kt.type, kt.row(rr), row.data(), kt.ne[0]);
                for (int64_t i = 0; i < Dk; ++i) k[size_t((kp - lo) * Dk + i)] = row[size_t(hk * Dk + i)];
                dequantize_row_fast(vt.type, vt.row(rr), row.data(), vt.ne[0]);
                std::copy(row.begin() + hk * Dv, row.begin() + (hk + 1) * Dv, v.begin() + (kp - lo) * Dv);
            }
        });
    }
};

// Scores of a tile of queries against a run of keys, in double (det_dot's exact products).
// Every (query, key) pair has one accumulator of 4 lanes stepping over the head dimension,
// summed ((l0 + l1) + (l2 + l3)) at the end: the same operations whatever the tile's shape,
// so a query's scores do not depend on which other queries share its tile.
constexpr int kTq = 3, kTk = 4;
// NI (<= kTq) queries x kTk keys: lanes[i][j] = the 4 lane sums of query i and key j. NI is a
// compile-time count so that a decode step (one query) computes one row, not three copies.
template <int NI>
void qk_block(const double* const* qr, const double* const* kr, int64_t D, double (*lanes)[kTk][4]) {
#if defined(__AVX2__) && defined(__FMA__)
    __m256d acc[NI][kTk];
    for (auto& row : acc)
        for (auto& x : row) x = _mm256_setzero_pd();
    for (int64_t d = 0; d < D; d += 4) {
        __m256d kv[kTk];
        for (int j = 0; j < kTk; ++j) kv[j] = _mm256_loadu_pd(kr[j] + d);
        for (int i = 0; i < NI; ++i) {
            const __m256d qv = _mm256_loadu_pd(qr[i] + d);
            for (int j = 0; j < kTk; ++j) acc[i][j] = _mm256_fmadd_pd(qv, kv[j], acc[i][j]);  // exact product
        }
    }
    for (int i = 0; i < NI; ++i)
        for (int j = 0; j < kTk; ++j) _mm256_storeu_pd(lanes[i][j], acc[i][j]);
#else
    for (int i = 0; i < NI; ++i)
        for (int j = 0; j < kTk; ++j) {
            for (int l = 0; l < 4; ++l) lanes[i][j][l] = 0;
            for (int64_t d = 0; d < D; d += 4)
                for (int l = 0; l < 4; ++l) lanes[i][j][l] += qr[i][d + l] * kr[j][d + l];
        }
#endif
}

// Keys j0 + jbase .. are the block's keys from index jbase on; query i sees block keys
// [a0[i], a1[i]) (non-decreasing in i): a tile of keys no query of a query tile sees is skipped
// (the causal half of a prompt block; its scores would never be read).
void qk_tile(const double* const* qs, int nq, const double* keys, int64_t nk, int64_t D, double* out, int64_t ld /* out: nq rows of stride ld */,
             int64_t jbase, const int64_t* a0, const int64_t* a1) {
    for (int64_t j0 = 0; j0 < nk; j0 += kTk) {
        const int64_t nj = std::min<int64_t>(kTk, nk - j0);
        const double* kr[kTk];
        for (int j = 0; j < kTk; ++j) kr[j] = keys + (j0 + std::min<int64_t>(j, nj - 1)) * D;
        for (int i0 = 0; i0 < nq; i0 += kTq) {
            const int ni = std::min(kTq, nq - i0);
            if (jbase + j0 >= a1[i0 + ni - 1] || jbase + j0 + nj <= a0[i0]) continue;
            double lanes[kTq][kTk][4];
            if (ni == 3) qk_block<3>(qs + i0, kr, D, lanes);
            else if (ni == 2) qk_block<2>(qs + i0, kr, D, lanes);
            else qk_block<1>(qs + i0, kr, D, lanes);
            for (int i = 0; i < ni; ++i)
                for (int j = 0; j < nj; ++j)
                    out[(i0 + i) * ld + j0 + j] = (lanes[i][j][0] + lanes[i][j][1]) + (lanes[i][j][2] + lanes[i][j][3]);
        }
    }
}

#if defined(__AVX2__) && defined(__FMA__)
// NI queries (a compile-time count, so the accumulators stay in registers) x 32 dims.
template <int NI>
void pv_rows(const float* const* ws, const float* vals, int64_t jb, int64_t je, int64_t D, int64_t d0, float* const* outs) {
    __m256 acc[NI][4];
    for (auto& row : acc)
        for (auto& x : row) x = _mm256_setzero_ps();
    for (int64_t j = jb; j < je; ++j) {
        const float* vr = vals + j * D + d0;
        const __m256 v0 = _mm256_loadu_ps(vr), v1 = _mm256_loadu_ps(vr + 8);
        const __m256 v2 = _mm256_loadu_ps(vr + 16), v3 = _mm256_loadu_ps(vr + 24);
        for (int i = 0; i < NI; ++i) {
            const __m256 w = _mm256_set1_ps(ws[i][j]);
            acc[i][0] = _mm256_fmadd_ps(w, v0, acc[i][0]);
            acc[i][1] = _mm256_fmadd_ps(w, v1, acc[i][1]);
            acc[i][2] = _mm256_fmadd_ps(w, v2, acc[i][2]);
            acc[i][3] = _mm256_fmadd_ps(w, v3, acc[i][3]);
        }
    }
    for (int i = 0; i < NI; ++i)
        for (int c = 0; c < 4; ++c) _mm256_storeu_ps(outs[i] + d0 + 8 * c, acc[i][c]);
}
#endif

// out_i[d] = fma(w_i[j], v_j[d], out_i[d]) for keys j in order (the reference's sequence;
// a zero weight leaves out unchanged: out starts at +0 and a round-to-nearest sum is never
// -0, so keys no query of a tile sees, [a0, a1) outside, are skipped). Tiles of 3 queries x
// 32 dims stay in registers over the keys instead of being loaded and stored per key.
void pv_tile(const float* const* ws, int nq, const float* vals, int64_t nk, int64_t D, float* const* outs, const int64_t* a0,
             const int64_t* a1) {
    // Each output element is its own chain over the keys, so slices of 32 dims run in
    // parallel without changing any element's order (this is what spreads a long-context
    // decode step over the cores).
    const int64_t n_slices = (D + 31) / 32;
    auto slice = [&](int64_t sl) {
        const int64_t d0 = sl * 32, d1 = std::min(D, d0 + 32);
#if defined(__AVX2__) && defined(__FMA__)
        if (d1 - d0 == 32) {
            for (int i0 = 0; i0 < nq; i0 += kTq) {
                const int ni = std::min(kTq, nq - i0);
                const int64_t jb = a0[i0], je = a1[i0 + ni - 1];
                if (ni == 3) pv_rows<3>(ws + i0, vals, jb, je, D, d0, outs + i0);
                else if (ni == 2) pv_rows<2>(ws + i0, vals, jb, je, D, d0, outs + i0);
                else pv_rows<1>(ws + i0, vals, jb, je, D, d0, outs + i0);
            }
            return;
        }
#endif
        for (int i = 0; i < nq; ++i) {
            std::fill(outs[i] + d0, outs[i] + d1, 0.0f);
            for (int64_t j = a0[i]; j < a1[i]; ++j) simd::fma_axpy(ws[i][j], vals + j * D + d0, outs[i] + d0, d1 - d0);
        }
    };
    // Short key ranges (decode at short context): a few microseconds of work, less than
    // waking the other worker costs; one thread does all slices.
    if (int64_t(nq) * nk * D < (int64_t(1) << 18)) {
        for (int64_t sl = 0; sl < n_slices; ++sl) slice(sl);
        return;
    }
    tbb::parallel_for(int64_t(0), n_slices, slice);
}

}  // namespace

// Tasks are (block of up to 64 tokens, kv head); inside, segments of consecutive positions
// go through the tiles above. Visibility and ring rows come
// from core/rules/attention_rule.h, as in the reference.
void attention(const Tensor& dst) {
    const Tensor& q = *dst.src[0];
    const Tensor& k = *dst.src[1];
    const Tensor& v = *dst.src[2];
    const int32_t* pos = dst.src[3]->data_as<const int32_t>();
    const int32_t* seq = dst.src[4]->data_as<const int32_t>();
    const AttentionParams p = dst.get_params<AttentionParams>();
    const int64_t Dk = q.ne[0], H = q.ne[1], T = q.ne[2], Dv = dst.ne[0];
    const int64_t R = p.ring_rows, n_seq = k.ne[1] / R, Hkv = p.n_head_kv, group = H / Hkv;
    for (int64_t t = 0; t < T; ++t) check_attention_query(seq[t], pos[t], p.window, R, n_seq);
    const int64_t n_blocks = (T + kQueryBlock - 1) / kQueryBlock;
    tbb::parallel_for(int64_t(0), n_blocks * Hkv, [&](int64_t task) {
        const int64_t t0 = (task / Hkv) * kQueryBlock, t1 = std::min(T, t0 + kQueryBlock), hk = task % Hkv;
        KeyBlock kb;
        std::vector<double> qd(size_t(kQueryBlock * Dk)), sc;
        std::vector<float> w;
        for (int64_t t = t0; t < t1;) {
            // A segment: consecutive positions of one sequence. Their windows' union is one
            // range of keys, each visible to some query of the segment, so every row read
            // holds a real key (a zero weight never meets an unwritten row).
            const int64_t s = seq[t];
            int64_t nq = 1;
            while (t + nq < t1 && seq[t + nq] == s && pos[t + nq] == pos[t + nq - 1] + 1) ++nq;
            kb.lo = attn_first_key(pos[t], p.window);
            kb.hi = pos[t + nq - 1];
            kb.load(k, v, s, R, hk, Dk, Dv);
            const int64_t nk = kb.hi - kb.lo + 1;
            sc.resize(size_t(nq * nk));
            w.resize(size_t(nq * nk));
            int64_t a0[kQueryBlock], a1[kQueryBlock];  // keys of query i: block keys [a0, a1)
            for (int64_t i = 0; i < nq; ++i) {
                a0[i] = attn_first_key(pos[t + i], p.window) - kb.lo;
                a1[i] = pos[t + i] - kb.lo + 1;
            }
            for (int64_t g = 0; g < group; ++g) {
                const int64_t h = hk * group + g;
                const double* qp[kQueryBlock];
                const float* wp[kQueryBlock];
                float* op[kQueryBlock];
                for (int64_t i = 0; i < nq; ++i) {
                    const float* qh = reinterpret_cast<const float*>(q.row(h, t + i));
                    for (int64_t d = 0; d < Dk; ++d) qd[size_t(i * Dk + d)] = qh[d];
                    qp[i] = qd.data() + i * Dk;
                    wp[i] = w.data() + i * nk;
                    op[i] = reinterpret_cast<float*>(dst.row(h, t + i));
                }
                // Scores are independent per (query, key): chunks of keys in parallel.
                tbb::parallel_for(tbb::blocked_range<int64_t>(0, nk, 512), [&](const tbb::blocked_range<int64_t>& r) {
                    qk_tile(qp, int(nq), kb.k.data() + r.begin() * Dk, r.end() - r.begin(), Dk, sc.data() + r.begin(), nk, r.begin(), a0, a1);
                });
                for (int64_t i = 0; i < nq; ++i) {
                    // Keys of query i: [k0, pt], as the reference; weights elsewhere are 0.
                    const int64_t b0 = a0[i], b1 = a1[i];
                    float* e = w.data() + i * nk;
                    std::fill(e, e + b0, 0.0f);
                    std::fill(e + b1, e + nk, 0.0f);
                    float mx = -INFINITY;
                    for (int64_t j = b0; j < b1; ++j) {
                        float x = float(sc[size_t(i * nk + j)]) * p.scale;
                        if (p.softcap > 0) x = p.softcap * det_tanh(x / p.softcap);
                        e[j] = x;
                        mx = std::fmax(mx, x);
                    }
                    int64_t j = b0;
                    for (const simd::fbatch vmx(mx); j + simd::W <= b1; j += simd::W)
                        simd::det_exp(simd::fbatch::load_unaligned(e + j) - vmx).store_unaligned(e + j);
                    for (; j < b1; ++j) e[j] = det_exp(e[j] - mx);
                    double sum = 0;
                    for (j = b0; j < b1; ++j) sum += e[j];  // in order, as the reference
                    for (j = b0; j < b1; ++j) e[j] = float(double(e[j]) / sum);
                }
                pv_tile(wp, int(nq), kb.v.data(), nk, Dv, op, a0, a1);
            }
            t += nq;
        }
    });
}

}  // namespace ls::cpu
