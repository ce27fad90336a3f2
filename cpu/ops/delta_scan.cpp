// delta_scan on the CPU: the reference recurrence (core/ref/delta_scan.cpp), parallel over
// (run, value head); each task keeps its head's state in place in the slot's memory (no copy)
// and scans the run's tokens in order. Dot products are det_dot4, as the reference: the same
// bits for any batching.
#include <tbb/parallel_for.h>

#include <cmath>
#include <vector>

#include "core/rules/detmath.h"
#include "core/ir/op_params.h"
#include "core/rules/scan_runs.h"
#include "cpu/ops/cpu_ops.h"
#include "cpu/scan_single.h"
#include "cpu/simd.h"

namespace ls::cpu {
namespace {

#if defined(__AVX__)
// Rows S_i (i = 0..R-1, Dk floats each, Dk % 4 == 0) of one head's state, one token: the
// reference step for each row, with the R rows interleaved. Each row's det_dot4 is one chain
// of dependent double adds per lane; one row at a time waits on the add latency at every
// step, R rows side by side overlap. Per row and lane the operations and their order are
// exactly simd::dot4's and the scalar loops', so the bits are the same.
template <int R>
void rows_step(float* S, int64_t Dk, const float* kn, const float* qn, const float* v, float decay, float b, float* out) {
    __m256d acc[R];
    alignas(32) double l[4];
    auto reduce = [&](__m256d a) {  // det_dot4's (s0 + s1) + (s2 + s3)
        _mm256_store_pd(l, a);
        return float((l[0] + l[1]) + (l[2] + l[3]));
    };
    // S_i = S_i * decay, d_i = dot4(S_i, kn)
    const __m128 vdec = _mm_set1_ps(decay);
    for (int r = 0; r < R; ++r) acc[r] = _mm256_setzero_pd();
    for (int64_t j = 0; j < Dk; j += 4) {
        const __m256d kd = _mm256_cvtps_pd(_mm_loadu_ps(kn + j));
        for (int r = 0; r < R; ++r) {
            float* Si = S + r * Dk + j;
            const __m128 sv = _mm_mul_ps(_mm_loadu_ps(Si), vdec);
            _mm_storeu_ps(Si, sv);
            acc[r] = _mm256_add_pd(acc[r], _mm256_mul_pd(_mm256_cvtps_pd(sv), kd));
        }
    }
    __m128 vu[R];
    for (int r = 0; r < R; ++r) vu[r] = _mm_set1_ps((v[r] - reduce(acc[r])) * b);
    // S_i = S_i + u_i * kn (product rounded, then the sum), out_i = dot4(S_i, qn)
    for (int r = 0; r < R; ++r) acc[r] = _mm256_setzero_pd();
    for (int64_t j = 0; j < Dk; j += 4) {
        const __m128 kv = _mm_loadu_ps(kn + j);
        const __m256d qd = _mm256_cvtps_pd(_mm_loadu_ps(qn + j));
        for (int r = 0; r < R; ++r) {
            float* Si = S + r * Dk + j;
            const __m128 sv = _mm_add_ps(_mm_loadu_ps(Si), _mm_mul_ps(vu[r], kv));
            _mm_storeu_ps(Si, sv);
            acc[r] = _mm256_add_pd(acc[r], _mm256_mul_pd(_mm256_cvtps_pd(sv), qd));
        }
    }
    for (int r = 0; r < R; ++r) out[r] = reduce(acc[r]);
}
#endif

// kSingle: the single-sequence-only form (bench twin, cpu/scan_single.h): one run over the
// ubatch's tokens in order, no run table walk and no token indirection.
template <bool kSingle> void scan(const Tensor& dst) {
    const Tensor& qkv = *dst.src[0];
    const Tensor& g = *dst.src[1];
    const Tensor& beta = *dst.src[2];
    const Tensor& state = *dst.src[3];
    const auto p = dst.get_params<DeltaScanParams>();
    const int64_t T = qkv.nrows(), Hk = p.n_k_heads, Dk = p.d_k, Hv = p.n_v_heads, Dv = p.d_v;
    const int32_t* order = dst.src[5]->data_as<const int32_t>();
    const int32_t* rt = dst.src[4]->data_as<const int32_t>();
    const std::vector<ScanRun> runs = kSingle ? std::vector<ScanRun>{{rt[0], 0, int32_t(T), rt[3]}}
                                              : read_scan_runs(rt, dst.src[4]->ne[1], order, T, state.ne[1], "delta_scan");
    tbb::parallel_for(int64_t(0), int64_t(runs.size()) * Hv, [&](int64_t job) {
        const ScanRun& r = runs[size_t(job / Hv)];
        const int64_t h = job % Hv;
        const int64_t hk = p.head_map == HEADS_TILED ? h % Hk : h / (Hv / Hk);
        float* S = reinterpret_cast<float*>(state.row(r.slot)) + h * Dv * Dk;
        if (r.reset) std::fill(S, S + Dv * Dk, 0.0f);
        std::vector<float> qn(static_cast<size_t>(Dk)), kn(static_cast<size_t>(Dk));
        for (int64_t t = 0; t < r.n; ++t) {
            const int64_t tok = kSingle ? t : order[r.first + t];
            const float* row = reinterpret_cast<const float*>(qkv.row(tok));
            const float* q = row + hk * Dk;
            const float* k = row + Hk * Dk + hk * Dk;
            const float* v = row + 2 * Hk * Dk + h * Dv;
            const float rq = 1.0f / std::sqrt(simd::dot4(q, q, Dk) + p.eps);
            const float rk = 1.0f / std::sqrt(simd::dot4(k, k, Dk) + p.eps);
            for (int64_t j = 0; j < Dk; ++j) {
                qn[size_t(j)] = q[j] * rq * p.scale;
                kn[size_t(j)] = k[j] * rk;
            }
            const float decay = det_exp(reinterpret_cast<const float*>(g.row(tok))[h]);
            const float b = reinterpret_cast<const float*>(beta.row(tok))[h];
            float* out = reinterpret_cast<float*>(dst.row(h, tok));
            // Elementwise float steps in xsimd batches (each lane the scalar operation: a
            // product rounded, then a sum rounded; no fused multiply-add), dots by simd::dot4.
            const simd::fbatch vdecay(decay);
            int64_t i0 = 0;
#if defined(__AVX__)
            constexpr int kRows = 4;
            if (Dk % 4 == 0)
                for (; i0 + kRows <= Dv; i0 += kRows) rows_step<kRows>(S + i0 * Dk, Dk, kn.data(), qn.data(), v + i0, decay, b, out + i0);
#endif
            for (int64_t i = i0; i < Dv; ++i) {
                float* Si = S + i * Dk;
                int64_t j = 0;
                for (; j + simd::W <= Dk; j += simd::W) (simd::fbatch::load_unaligned(Si + j) * vdecay).store_unaligned(Si + j);
                for (; j < Dk; ++j) Si[j] = Si[j] * decay;
                const float u = (v[i] - simd::dot4(Si, kn.data(), Dk)) * b;
                const simd::fbatch vu(u);
                for (j = 0; j + simd::W <= Dk; j += simd::W)
                    (simd::fbatch::load_unaligned(Si + j) + vu * simd::fbatch::load_unaligned(kn.data() + j)).store_unaligned(Si + j);
                for (; j < Dk; ++j) Si[j] = Si[j] + u * kn[size_t(j)];
                out[i] = simd::dot4(Si, qn.data(), Dk);
            }
        }
    });
}

}  // namespace

void delta_scan(const Tensor& dst) { scan<false>(dst); }
void delta_scan_single_sequence(const Tensor& dst) { scan<true>(dst); }

}  // namespace ls::cpu
