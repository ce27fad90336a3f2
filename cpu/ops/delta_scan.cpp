// delta_scan on the CPU: the reference recurrence (core/ref/delta_scan.cpp), parallel over
// (run, value head); each task keeps its head's state in place in the slot's memory (no copy)
// and scans the run's tokens in order. Dot products are canon_dot (core/rules/canon.h), as the
// reference: the same bits for any batching.
#include <tbb/parallel_for.h>

#include <vector>

#include "core/rules/canon.h"
#include "core/ir/op_params.h"
#include "core/rules/scan_runs.h"
#include "cpu/ops/cpu_ops.h"
#include "cpu/scan_single.h"
#include "cpu/simd.h"

namespace ls::cpu {
namespace {

#if defined(LS_CPU_CANON_SIMD)
// One row S_i (Dk floats, Dk a multiple of simd::VW) of one head's state, one token: the
// reference step, each canon_dot fused with the elementwise pass that produces its operand
// (chunk j/VW of the row goes to partial-sum register (j/VW) mod NR, simd.h). Returns o_i.
inline float row_step(float* Si, int64_t Dk, const float* kn, const float* qn, float vi, float decay, float b) {
    using namespace simd;
    vecf r[NR];
    for (auto& x : r) x = vzero();
    const vecf vdec = vset1(decay);
    for (int64_t j = 0; j < Dk; j += VW) {  // S_i = S_i * decay; d = canon_dot(S_i, kn)
        const vecf sv = vmul(vload(Si + j), vdec);
        vstore(Si + j, sv);
        r[(j / VW) % NR] = vadd(r[(j / VW) % NR], vmul(sv, vload(kn + j)));
    }
    const vecf vu = vset1((vi - tree(r)) * b);
    for (auto& x : r) x = vzero();
    for (int64_t j = 0; j < Dk; j += VW) {  // S_i = S_i + u * kn; o = canon_dot(S_i, qn)
        const vecf sv = vadd(vload(Si + j), vmul(vu, vload(kn + j)));
        vstore(Si + j, sv);
        r[(j / VW) % NR] = vadd(r[(j / VW) % NR], vmul(sv, vload(qn + j)));
    }
    return tree(r);
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
            const float rq = canon_div(1.0f, canon_sqrt(simd::canon_dot(q, q, Dk) + p.eps));
            const float rk = canon_div(1.0f, canon_sqrt(simd::canon_dot(k, k, Dk) + p.eps));
            for (int64_t j = 0; j < Dk; ++j) {
                qn[size_t(j)] = q[j] * rq * p.scale;
                kn[size_t(j)] = k[j] * rk;
            }
            const float decay = det_exp(reinterpret_cast<const float*>(g.row(tok))[h]);
            const float b = reinterpret_cast<const float*>(beta.row(tok))[h];
            float* out = reinterpret_cast<float*>(dst.row(h, tok));
            // Elementwise float steps in xsimd batches (each lane the scalar operation: a
            // product rounded, then a sum rounded; no fused multiply-add), dots by canon_dot.
            const simd::fbatch vdecay(decay);
            int64_t i0 = 0;
#if defined(LS_CPU_CANON_SIMD)
            if (Dk % simd::VW == 0)
                for (; i0 < Dv; ++i0) out[i0] = row_step(S + i0 * Dk, Dk, kn.data(), qn.data(), v[i0], decay, b);
#endif
            for (int64_t i = i0; i < Dv; ++i) {
                float* Si = S + i * Dk;
                int64_t j = 0;
                for (; j + simd::W <= Dk; j += simd::W) (simd::fbatch::load_unaligned(Si + j) * vdecay).store_unaligned(Si + j);
                for (; j < Dk; ++j) Si[j] = Si[j] * decay;
                const float u = (v[i] - simd::canon_dot(Si, kn.data(), Dk)) * b;
                const simd::fbatch vu(u);
                for (j = 0; j + simd::W <= Dk; j += simd::W)
                    (simd::fbatch::load_unaligned(Si + j) + vu * simd::fbatch::load_unaligned(kn.data() + j)).store_unaligned(Si + j);
                for (; j < Dk; ++j) Si[j] = Si[j] + u * kn[size_t(j)];
                out[i] = simd::canon_dot(Si, qn.data(), Dk);
            }
        }
    });
}

}  // namespace

void delta_scan(const Tensor& dst) { scan<false>(dst); }
void delta_scan_single_sequence(const Tensor& dst) { scan<true>(dst); }

}  // namespace ls::cpu
