// The KV write and attention every family's layers run (SEMANTICS.md section 1), written once:
// the ubatch's k and v rows go into the layer's cache at its ring rows (sequence slot * R +
// pos mod R, R = kv.ring_rows), and q attends over that cache. What differs between families
// (projections, biases, norms, rope, what is done with the output) stays in each family.
#pragma once
#include <cstdint>

#include "core/ir/graph.h"
#include "core/memory/kv_cache.h"
#include "core/models/model.h"

namespace ls {

struct CachedAttention {
    int32_t window = 0;       // 0 full attention; a window in tokens; kAttnFirstGiven (key_pos gives each query's first key)
    float softcap = 0.f;      // > 0: scores soft-capped (Gemma 2)
    Tensor* sinks = nullptr;  // per-head sink logits (gpt-oss), or null
    int src = -1;             // >= 0: attend over layer src's cache, writing nothing (Gemma 4's KV sharing)
};

// Layer il's attention: k (head_dim_k * n_head_kv values per token: (head_dim_k, n_head_kv, T)
// or already (head_dim_k * n_head_kv, T)) and v likewise are written into the cache rows
// `rows` gives for the layer's ring, unless opt.src names another layer; then q
// (head_dim_k, n_head, T) attends over the cache with key positions key_pos (the ubatch's
// positions, or attn_positions / attn_symmetric_keys) and sequences seq. Returns
// (head_dim_v, n_head, T).
Tensor* cached_attention(Graph& g, KvCache& kv, CacheRows& rows, int il, Tensor* q, Tensor* k, Tensor* v, Tensor* key_pos, Tensor* seq,
                         int32_t n_head_kv, float scale, const CachedAttention& opt = {});

// A whole attention layer without positional encoding (nemotron_h, granitehybrid): q, k and v
// projected from h [n_embd, T] with their optional biases, cached_attention over layer il's
// cache, the output projection with its bias. -> [n_embd, T].
Tensor* nope_attention(Graph& g, KvCache& kv, CacheRows& rows, int il, const AttnWeights& w, const LayerParams& L, Tensor* h, Tensor* pos,
                       Tensor* seq, float scale);

}  // namespace ls
