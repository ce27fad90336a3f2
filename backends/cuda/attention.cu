#include <algorithm>
#include <stdexcept>
#include <vector>

#include "backends/cuda/attention.cuh"
#include "backends/cuda/elementwise.cuh"
#include "backends/cuda/quant_device.cuh"
#include "backends/cuda/support_predicates.h"
#include "core/rules/attention_rule.h"
#include "core/ir/op_params.h"

namespace ls::cuda {
namespace {

constexpr size_t kMaxScratchFloats = size_t(64) << 20;  // 256 MiB of scores per launch at most

}  // namespace

void attention(const Tensor& dst, Ctx& ctx) {
    const Tensor& q = *dst.src[0];
    const Tensor& k = *dst.src[1];
    const Tensor& v = *dst.src[2];
    const AttentionParams p = dst.get_params<AttentionParams>();
    const int64_t H = q.ne[1], T = q.ne[2], Dv = dst.ne[0];
    const int64_t R = p.ring_rows, n_seq = k.ne[1] / R, group = H / p.n_head_kv;
    if (T == 0 || H == 0) return;
    // Positions and sequences are checked on the host before anything runs (the reference's
    // messages), and give the longest key run, which sizes the score scratch.
    const std::vector<uint8_t> pos_b = ctx.host_bytes(*dst.src[3]), seq_b = ctx.host_bytes(*dst.src[4]);
    const int32_t* pos = reinterpret_cast<const int32_t*>(pos_b.data());
    const int32_t* seq = reinterpret_cast<const int32_t*>(seq_b.data());
    int64_t n_max = 1;
    for (int64_t t = 0; t < T; ++t) {
        check_attention_query(seq[t], pos[t], p.window, R, n_seq);
        n_max = std::max(n_max, int64_t(pos[t]) - attn_first_key(pos[t], p.window) + 1);
    }
    // One sequence at consecutive positions, several queries: the tiled kernel.
    bool one_run = T >= 2 && q.ne[0] <= 256 && Dv <= 256 && q.ne[0] > 0 && Dv > 0;
    for (int64_t t = 1; one_run && t < T; ++t) one_run = seq[t] == seq[0] && pos[t] == pos[0] + t;
    if (one_run && T * H * n_max <= int64_t(kMaxScratchFloats) && (T + kTQ - 1) / kTQ <= 65535) {
        auto* scratch = static_cast<float*>(ctx.temp(size_t(T * H * n_max) * sizeof(float)));
        LS_LAUNCH(attention_tiled_kernel, dim3(unsigned(H), unsigned((T + kTQ - 1) / kTQ)), kTileThreads, ctx.stream)(
            reinterpret_cast<const float*>(dptr(q)), shape_of(q), dptr(k), k.type, int64_t(k.nb[1]), dptr(v), v.type,
            int64_t(v.nb[1]), seq[0], pos[0], T, p.window, R, group, p.scale, p.softcap, Dv, dptr(dst), shape_of(dst), scratch,
            n_max);
        LS_CUDA_CHECK_LAUNCH("attention_tiled_kernel");
        return;
    }
    // Queries per launch so that the scores fit the scratch cap.
    const int64_t score_blocks = (n_max + kScoreKeys - 1) / kScoreKeys;
    if (score_blocks > 65535)
        throw std::runtime_error("cuda attention: a query sees " + std::to_string(n_max) + " keys, more than one launch covers (" +
                                 std::to_string(int64_t(65535) * kScoreKeys) + ")");
    const int64_t per_query = H * n_max;
    const int64_t tq = std::max<int64_t>(1, std::min<int64_t>({T, int64_t(kMaxScratchFloats) / per_query, 65535}));
    auto* scratch = static_cast<float*>(ctx.temp(size_t(tq * per_query) * sizeof(float)));
    const auto* pos_d = reinterpret_cast<const int32_t*>(dptr(*dst.src[3]));
    const auto* seq_d = reinterpret_cast<const int32_t*>(dptr(*dst.src[4]));
    for (int64_t t0 = 0; t0 < T; t0 += tq) {
        const int64_t nt = std::min(tq, T - t0);
        LS_LAUNCH(attention_scores_kernel, dim3(unsigned(H), unsigned(nt), unsigned(score_blocks)), kScoreWarps * 32, ctx.stream)(
            reinterpret_cast<const float*>(dptr(q)), shape_of(q), dptr(k), k.type, int64_t(k.nb[1]), pos_d, seq_d, t0, p.window, R,
            group, p.scale, p.softcap, scratch, n_max);
        LS_CUDA_CHECK_LAUNCH("attention_scores_kernel");
        LS_LAUNCH(attention_pv_kernel, dim3(unsigned(H), unsigned(nt), unsigned((Dv + kPvCols - 1) / kPvCols)), kPvThreads, ctx.stream)(
            scratch, n_max, dptr(v), v.type, int64_t(v.nb[1]), pos_d, seq_d, t0, p.window, R, group, Dv, dptr(dst), shape_of(dst));
        LS_CUDA_CHECK_LAUNCH("attention_pv_kernel");
    }
}

bool supports_attention(const Tensor& n) {
    const Tensor* a = n.src[0];
    const Tensor* b = n.src[1];
    return f32_elems(a) && b && cache_type(b->type) && n.src[2] && cache_type(n.src[2]->type) && n.src[3] &&
           n.src[3]->type == DType::I32 && n.src[3]->is_contiguous() && n.src[4] && n.src[4]->type == DType::I32 &&
           n.src[4]->is_contiguous() && f32_elems(&n);
}

}  // namespace ls::cuda
