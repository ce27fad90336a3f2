#include <algorithm>
#include <cstdlib>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include "backends/cuda/attention.cuh"
#include "backends/cuda/elementwise.cuh"
#include "backends/cuda/quant_device.cuh"
#include "backends/cuda/support_predicates.h"
#include "core/rules/attention_rule.h"
#include "core/ir/index_inputs.h"
#include "core/ir/op_params.h"
#include "core/quant/dtype.h"

namespace ls::cuda {
namespace {

constexpr size_t kMaxScratchFloats = size_t(64) << 20;  // 256 MiB of partials per launch at most
// Split-K when fewer (head, query) pairs than this: enough CUDA blocks to fill a large GPU
// (132 SMs on an H100, several blocks each) come from splitting the keys.
constexpr int64_t kSplitTarget = 512;

// Split the keys of a node with fewer tiles than this (decode: a tile or a few per KV head),
// aiming at about kTileSplitTarget CUDA blocks. The choice depends on the heads and the number
// of queries only, so that a decode step's graph keeps its kernels as the context grows and
// only the grid changes (the graph node is set again).
constexpr int64_t kTileSplitBelow = 128, kTileSplitTarget = 1024;

// LOCKSTEP_CUDA_ATTN_TILES=0: the per-query kernels on every geometry (the tile kernels'
// fallback, kept tested on every op-table case, and the other side of an A/B on a GPU).
bool tiles_off() {
    static const bool off = [] {
        const char* e = std::getenv("LOCKSTEP_CUDA_ATTN_TILES");
        return e && std::string(e) == "0";
    }();
    return off;
}

// The tile kernels over the node (plan_tiles said they fit); nb_max: the most key blocks a
// query sees (the partials' rows per query and head).
void attention_tiles(const TileGeom& g, const std::function<AttnArgs(int64_t, int64_t, float*)>& args, const int32_t* pos, int64_t H,
                     int64_t T, int64_t Dv, int32_t W, int64_t nb_max, Ctx& ctx) {
    const int64_t hx = H / g.gq, tiles = hx * ((T + g.tq - 1) / g.tq);
    const bool split = tiles < kTileSplitBelow;
    const int64_t nbu = tile_key_span(pos, T, g.tq, W);
    int64_t per = nbu, splits = 1;
    if (split) {
        splits = std::min(nbu, (kTileSplitTarget + tiles - 1) / tiles);
        per = (nbu + splits - 1) / splits;
        splits = (nbu + per - 1) / per;
    }
    // Queries per launch: whole tiles, at most 65535 of them, partials within the scratch cap.
    const int64_t per_query = split ? H * nb_max * (Dv + 2) : 1;
    int64_t tq = std::min<int64_t>({T, int64_t(65535) * g.tq, std::max<int64_t>(1, int64_t(kMaxScratchFloats) / per_query)});
    if (tq >= g.tq) tq -= tq % g.tq;
    else tq = g.tq;  // one tile's queries fit any scratch the cap allows
    float* partials = split ? static_cast<float*>(ctx.temp(size_t(std::min(tq, T) * per_query) * sizeof(float))) : nullptr;
    for (int64_t t0 = 0; t0 < T; t0 += tq) {
        const int64_t nt = std::min(tq, T - t0);
        const AttnArgs a = args(t0, per, partials);
        const dim3 grid(unsigned(hx), unsigned((nt + g.tq - 1) / g.tq), unsigned(splits));
        with_pow2(g.pairs, [&](auto pc) {
            constexpr int P = decltype(pc)::value;
            if (g.f16) LS_LAUNCH((attention_tile_kernel<P, true>), grid, kTileThreads, ctx.stream)(a, g, nt);
            else LS_LAUNCH((attention_tile_kernel<P, false>), grid, kTileThreads, ctx.stream)(a, g, nt);
            LS_CUDA_CHECK_LAUNCH("attention_tile_kernel");
        });
        if (split) {
            with_pow2((Dv + kTileThreads - 1) / kTileThreads, [&](auto ko) {
                constexpr int KOUT = decltype(ko)::value;
                LS_LAUNCH(attention_fold_chunks_kernel<KOUT>, dim3(unsigned(H), unsigned(nt)), kTileThreads, ctx.stream)(a, kFoldChunk);
                LS_CUDA_CHECK_LAUNCH("attention_fold_chunks_kernel");
            });
        }
    }
}

}  // namespace

void attention(const Tensor& dst, Ctx& ctx) {
    const Tensor& q = *dst.src[0];
    const Tensor& k = *dst.src[1];
    const Tensor& v = *dst.src[2];
    const AttentionParams p = dst.get_params<AttentionParams>();
    const int64_t Dk = q.ne[0], H = q.ne[1], T = q.ne[2], Dv = dst.ne[0];
    const int64_t R = p.ring_rows, group = H / p.n_head_kv;
    if (T == 0 || H == 0) return;
    if (Dk > kAttnMaxHead || Dv > kAttnMaxHead)
        throw std::invalid_argument("cuda attention: heads wider than " + std::to_string(kAttnMaxHead));
    // Positions and sequences, checked by core before the graph ran (check_index_inputs), are
    // read on the host from the graph's inputs: they give the most key blocks a query sees,
    // which sizes the split, and the tiles' geometry.
    const int32_t* pos = index_data<int32_t>(*ctx.graph, dst.src[3], "attention");
    const int32_t* seq = index_data<int32_t>(*ctx.graph, dst.src[4], "attention");
    int64_t nb_max = 1;
    for (int64_t t = 0; t < T; ++t)
        nb_max = std::max(nb_max, attn_block_of(pos[t]) - attn_block_of(attn_first_of(pos, t, T, p.window)) + 1);
    // The launch's view of the node for queries t0.. (per: key blocks per split).
    auto args = [&](int64_t t0, int64_t per_split, float* partials) {
        return AttnArgs{reinterpret_cast<const float*>(dptr(q)), shape_of(q), dptr(k), int64_t(k.nb[1]), dptr(v),
                        int64_t(v.nb[1]), reinterpret_cast<const int32_t*>(dptr(*dst.src[3])),
                        reinterpret_cast<const int32_t*>(dptr(*dst.src[4])), t0, T, R, group, Dv,
                        dptr(dst), shape_of(dst), per_split, partials, nb_max,
                        dst.src[5] ? reinterpret_cast<const float*>(dptr(*dst.src[5])) : nullptr, k.type, v.type, p.window, p.scale,
                        p.softcap};
    };
    const bool one_seq = std::all_of(seq, seq + T, [&](int32_t x) { return x == seq[0]; });
    const TileGeom g = tiles_off() ? TileGeom{} : plan_tiles(Dk, Dv, group, k.type, int64_t(k.nb[1]), v.type, int64_t(v.nb[1]), one_seq);
    if (g.ok) {
        attention_tiles(g, args, pos, H, T, Dv, p.window, nb_max, ctx);
        return;
    }
    // The per-query kernels. Few (head, query) pairs: split-K, partials and the fold kernel,
    // even where one split covers every key block (the graph keeps its shape).
    const bool split = H * T < kSplitTarget;
    int64_t per = nb_max, splits = 1;
    if (split) {
        splits = std::min(nb_max, (kSplitTarget + H * T - 1) / (H * T));
        per = (nb_max + splits - 1) / splits;
        splits = (nb_max + per - 1) / per;
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
    return f32_elems(a) && a->ne[0] <= kAttnMaxHead && n.ne[0] <= kAttnMaxHead && b && cache_type(b->type) && n.src[2] && cache_type(n.src[2]->type) && host_i32(n.src[3]) &&
           host_i32(n.src[4]) && f32_elems(&n) &&
           (!n.src[5] || (f32_elems(n.src[5]) && n.src[5]->is_contiguous()));
}

}  // namespace ls::cuda
