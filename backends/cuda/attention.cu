#include <algorithm>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <vector>

#include "backends/cuda/attention.cuh"
#include "backends/cuda/elementwise.cuh"
#include "backends/cuda/quant_device.cuh"
#include "backends/cuda/support_predicates.h"
#include "core/rules/attention_rule.h"
#include "core/ir/op_params.h"
#include "core/quant/dtype.h"

namespace ls::cuda {
namespace {

constexpr size_t kMaxScratchFloats = size_t(64) << 20;  // 256 MiB of partials per launch at most
// Split-K when fewer (head, query) pairs than this: enough CUDA blocks to fill a large GPU
// (132 SMs on an H100, several blocks each) come from splitting the keys.
constexpr int64_t kSplitTarget = 512;

// LOCKSTEP_CUDA_ATTN_TILES=1: prompt attention over one sequence in query tiles
// (attention_tile_kernel), opt-in until a GPU has timed it against the per-query kernel;
// =force: also where the keys would be split (decode, small cases), so that the op table and
// the tiny models run the tile kernel on every geometry they have.
int tiles_mode() {  // 0 off, 1 prompts, 2 forced
    static const int mode = [] {
        const char* e = std::getenv("LOCKSTEP_CUDA_ATTN_TILES");
        if (!e || !*e || std::string(e) == "0") return 0;
        return std::string(e) == "force" ? 2 : 1;
    }();
    return mode;
}

}  // namespace

void attention(const Tensor& dst, Ctx& ctx) {
    const Tensor& q = *dst.src[0];
    const Tensor& k = *dst.src[1];
    const Tensor& v = *dst.src[2];
    const AttentionParams p = dst.get_params<AttentionParams>();
    const int64_t Dk = q.ne[0], H = q.ne[1], T = q.ne[2], Dv = dst.ne[0];
    const int64_t R = p.ring_rows, n_seq = k.ne[1] / R, group = H / p.n_head_kv;
    if (T == 0 || H == 0) return;
    if (Dk > kAttnMaxHead || Dv > kAttnMaxHead)
        throw std::invalid_argument("cuda attention: heads wider than " + std::to_string(kAttnMaxHead));
    // Positions and sequences are checked on the host before anything runs (the reference's
    // messages), and give the most key blocks a query sees, which sizes the split.
    const std::vector<uint8_t> pos_b = ctx.host_bytes(*dst.src[3]), seq_b = ctx.host_bytes(*dst.src[4]);
    const int32_t* pos = reinterpret_cast<const int32_t*>(pos_b.data());
    const int32_t* seq = reinterpret_cast<const int32_t*>(seq_b.data());
    int64_t nb_max = 1;
    for (int64_t t = 0; t < T; ++t) {
        check_attention_query(seq[t], pos[t], p.window, R, n_seq);
        nb_max = std::max(nb_max, attn_block_of(pos[t]) - attn_block_of(attn_first_key(pos[t], p.window)) + 1);
    }
    // Few (head, query) pairs: split-K, partials and the fold kernel, even where one split
    // covers every key block, so that a decode step's graph keeps its shape (kernels) as the
    // context grows and only the grid changes (cudaGraphExecUpdate).
    const bool split = H * T < kSplitTarget;
    int64_t per = nb_max, splits = 1;
    if (split) {
        splits = std::min(nb_max, (kSplitTarget + H * T - 1) / (H * T));
        per = (nb_max + splits - 1) / splits;
        splits = (nb_max + per - 1) / per;
    }
    // The launch's view of the node for queries t0.. (per: key blocks per split).
    auto args = [&](int64_t t0, int64_t per_split, float* partials) {
        return AttnArgs{reinterpret_cast<const float*>(dptr(q)), shape_of(q), dptr(k), k.type, int64_t(k.nb[1]), dptr(v), v.type,
                        int64_t(v.nb[1]), reinterpret_cast<const int32_t*>(dptr(*dst.src[3])),
                        reinterpret_cast<const int32_t*>(dptr(*dst.src[4])), t0, p.window, R, group, p.scale, p.softcap, Dv,
                        dptr(dst), shape_of(dst), per_split, partials, nb_max,
                        dst.src[5] ? reinterpret_cast<const float*>(dptr(*dst.src[5])) : nullptr};
    };
    // Query tiles: a prompt (no split) of one sequence, heads of whole cache blocks that fit.
    // kb / vb: bytes of a head's slice of a K / V row (0 where the head splits a cache block).
    const int64_t kb = Dk % block_size(k.type) == 0 ? int64_t(row_bytes(k.type, Dk)) : 0;
    const int64_t vb = Dv % block_size(v.type) == 0 ? int64_t(row_bytes(v.type, Dv)) : 0;
    auto tiles_fit = [&] {
        return Dk <= kTileMaxHead && Dv <= kTileMaxHead && kb > 0 && vb > 0 && kAttnBlock * kb <= kTileRowsBytes &&
               kAttnBlock * vb <= kTileRowsBytes && std::all_of(seq, seq + T, [&](int32_t x) { return x == seq[0]; });
    };
    if (tiles_mode() > 0 && (!split || tiles_mode() == 2) && tiles_fit()) {
        const int64_t tq = std::min<int64_t>(T, int64_t(65535) * kTileQ);
        for (int64_t t0 = 0; t0 < T; t0 += tq) {
            const int64_t nt = std::min(tq, T - t0);
            const AttnArgs a = args(t0, nb_max, nullptr);
            const dim3 grid(unsigned(H), unsigned((nt + kTileQ - 1) / kTileQ));
            // Dv <= kTileMaxHead: one or two outputs per thread (with_attn_outputs would also
            // build the 4- and 8-output forms, never launched here).
            if (Dv <= kAttnThreads)
                LS_LAUNCH(attention_tile_kernel<1>, grid, kAttnThreads, ctx.stream)(a, nt, kb, vb);
            else
                LS_LAUNCH(attention_tile_kernel<2>, grid, kAttnThreads, ctx.stream)(a, nt, kb, vb);
            LS_CUDA_CHECK_LAUNCH("attention_tile_kernel");
        }
        return;
    }
    // Queries per launch: the grid's y, and the partials within the scratch cap.
    const int64_t per_query = split ? H * nb_max * (Dv + 2) : 1;
    const int64_t tq = std::max<int64_t>(1, std::min<int64_t>({T, int64_t(kMaxScratchFloats) / per_query, 65535}));
    float* partials = split ? static_cast<float*>(ctx.temp(size_t(tq * per_query) * sizeof(float))) : nullptr;
    for (int64_t t0 = 0; t0 < T; t0 += tq) {
        const int64_t nt = std::min(tq, T - t0);
        const AttnArgs a = args(t0, per, partials);
        with_attn_outputs(Dv, [&](auto ko) {
            using KO = decltype(ko);  // KO::value outputs per thread
            LS_LAUNCH(attention_kernel<KO::value>, dim3(unsigned(H), unsigned(nt), unsigned(splits)), kAttnThreads, ctx.stream)(a);
            LS_CUDA_CHECK_LAUNCH("attention_kernel");
            if (split) {
                LS_LAUNCH(attention_fold_kernel<KO::value>, dim3(unsigned(H), unsigned(nt)), kAttnThreads, ctx.stream)(a);
                LS_CUDA_CHECK_LAUNCH("attention_fold_kernel");
            }
        });
    }
}

bool supports_attention(const Tensor& n) {
    const Tensor* a = n.src[0];
    const Tensor* b = n.src[1];
    return f32_elems(a) && a->ne[0] <= kAttnMaxHead && n.ne[0] <= kAttnMaxHead && b && cache_type(b->type) && n.src[2] && cache_type(n.src[2]->type) && n.src[3] &&
           n.src[3]->type == DType::I32 && n.src[3]->is_contiguous() && n.src[4] && n.src[4]->type == DType::I32 &&
           n.src[4]->is_contiguous() && f32_elems(&n) &&
           (!n.src[5] || (f32_elems(n.src[5]) && n.src[5]->is_contiguous()));
}

}  // namespace ls::cuda
