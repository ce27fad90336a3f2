// Tiled quantized matrix products (see quant_gemm.h for the per-lane arithmetic contract):
// the activation preparation and the dispatch of a row group to the tiles of cpu/gemm/ by
// token groups.
//
// A call covers 8 weight rows (16 for the 32-element block types with AVX-512 VNNI) and G
// tokens; lane r of every vector belongs to row r. The float part is lane-wise, so the value
// of a lane is the same whatever G is (G = 1 is the generation path).
#include "cpu/quant_gemm.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "core/quant/quant.h"
#include "core/quant/quant_blocks.h"
#include "cpu/gemm/act_layout.h"
#include "cpu/gemm/tiles.h"
#include "cpu/quant_rows.h"

namespace ls::cpu {
using namespace ls::qb;
using gemm::is_legacy;
using gemm::legacy_extra_off;
using gemm::legacy_off;
using gemm::minblock_extra_off;

namespace {
// Q4_1, Q5_1: 32-element blocks with a scale and a min, over Q8_1 activations (minblock_tile8).
bool is_min_block(DType t) { return t == DType::Q4_1 || t == DType::Q5_1; }
size_t act_bytes(DType t, int64_t k) {
    if (is_legacy(t)) return legacy_extra_off(k) + 2 * sizeof(float) * static_cast<size_t>(k / QK);
    if (is_min_block(t)) return minblock_extra_off(k) + 2 * sizeof(float) * static_cast<size_t>(k / QK);
    return row_bytes(vec_dot_type(t), k);
}
}  // namespace

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

template <int G>
void run_tile(DType t, const uint8_t* const* wr, const uint8_t* a, size_t astride, int64_t k, float* const* out, int nr, size_t pf) {
    if (is_legacy(t)) return gemm::legacy_tile8<G>(t, wr, a, astride, k, out, nr, pf);
    if (is_min_block(t)) return gemm::minblock_tile8<G>(t, wr, a, astride, k, out, nr, pf);
    if (t == DType::IQ4_XS || is_grid_iq(t)) return gemm::iq_tile8<G>(t, wr, a, astride, k, out, nr, pf);
    if (t == DType::TQ1_0 || t == DType::TQ2_0) return gemm::ternary_tile8<G>(t, wr, a, astride, k, out, nr, pf);
    return gemm::kquant_tile8<G>(t, wr, a, astride, k, out, nr, pf);
}
}  // namespace
#endif

bool gemm_supported(DType t) {
#if LS_GEMM_AVX2
    return is_legacy(t) || is_min_block(t) || t == DType::Q2_K || t == DType::Q3_K || t == DType::Q4_K || t == DType::Q5_K ||
           t == DType::Q6_K || t == DType::IQ4_XS || t == DType::TQ1_0 || t == DType::TQ2_0 || is_grid_iq(t);
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
    if (is_min_block(t)) {
        const auto* b = reinterpret_cast<const BlockQ8_1*>(dst);
        const int64_t nb = k / QK;
        float* d = reinterpret_cast<float*>(dst + minblock_extra_off(k));
        for (int64_t i = 0; i < nb; ++i) {
            uint16_t h[2];
            std::memcpy(&h[0], &b[i].d, 2);
            std::memcpy(&h[1], &b[i].s, 2);
            d[i] = fp16_to_fp32(h[0]);
            d[nb + i] = fp16_to_fp32(h[1]);
        }
    }
}

void gemm_tile(DType t, const uint8_t* w, size_t wstride, int nr, const uint8_t* a, size_t astride, int ntok,
               int64_t k, float* const* out) {
    // Validates k against the block size (throws); cheap test first, this runs per row group.
    if (!gemm_supported(t) || k <= 0 || k % (is_legacy(t) || is_min_block(t) ? QK : QK_K) != 0) row_bytes(t, k);
#if LS_GEMM_V512
    if (is_legacy(t) && nr >= 1 && nr <= 16 && ntok > 8) {
        const uint8_t* wr[16];
        for (int r = 0; r < 16; ++r) wr[r] = w + wstride * static_cast<size_t>(std::min(r, nr - 1));
        // Compute bound here (more than 8 tokens): no prefetch.
        by_token_groups<gemm::kMaxGroup16>(ntok, [&]<int G>(int g) {
            gemm::legacy_tile16<G>(t, wr, a + astride * static_cast<size_t>(g), astride, k, out + g, nr, 0);
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
        by_token_groups<gemm::kMaxGroup8>(ntok, [&]<int G>(int g) {
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
