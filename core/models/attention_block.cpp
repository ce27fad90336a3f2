#include "core/models/attention_block.h"

#include "core/ir/ops.h"

namespace ls {

namespace {
// t as (values per token, T): a view where it has more dimensions, t itself where it is so.
Tensor* per_token_rows(Graph& g, Tensor* t, int64_t T) {
    if (t->ne[1] == T && t->ne[2] == 1 && t->ne[3] == 1) return t;
    return ops::reshape(g, t, {t->nelements() / T, T});
}
}  // namespace

Tensor* cached_attention(Graph& g, KvCache& kv, CacheRows& rows, int il, Tensor* q, Tensor* k, Tensor* v, Tensor* key_pos, Tensor* seq,
                         int32_t n_head_kv, float scale, const CachedAttention& opt) {
    using namespace ops;
    const int src = opt.src >= 0 ? opt.src : il;
    Tensor *kc = kv.k(src), *vc = kv.v(src);
    if (opt.src < 0) {
        const int64_t T = q->ne[2];
        Tensor* at = rows(kv.ring_rows(il));
        kc = set_rows(g, kc, per_token_rows(g, k, T), at);
        // V inside K (MLA's latent): the view of the K just written, so attention reads it
        // after the write; v is not written twice.
        vc = kv.v_in_k(il) ? view_2d(g, kc, vc->ne[0], vc->ne[1], vc->nb[1], 0) : set_rows(g, vc, per_token_rows(g, v, T), at);
    }
    const AttentionParams ap{opt.window, int32_t(kv.ring_rows(src)), n_head_kv, scale, opt.softcap};
    return attention(g, q, kc, vc, key_pos, seq, ap, opt.sinks);
}

Tensor* nope_attention(Graph& g, KvCache& kv, CacheRows& rows, int il, const AttnWeights& w, const LayerParams& L, Tensor* h, Tensor* pos,
                       Tensor* seq, float scale) {
    using namespace ops;
    auto biased = [&](Tensor* y, Tensor* b) { return b ? add(g, y, b) : y; };
    const int64_t T = h->ne[1], hd = L.head_dim_k;
    Tensor* q = reshape(g, biased(mul_mat(g, w.wq, h), w.bq), {hd, L.n_head, T});
    Tensor* k = reshape(g, biased(mul_mat(g, w.wk, h), w.bk), {hd, L.n_head_kv, T});
    Tensor* v = biased(mul_mat(g, w.wv, h), w.bv);
    Tensor* a = cached_attention(g, kv, rows, il, q, k, v, pos, seq, L.n_head_kv, scale);
    return biased(mul_mat(g, w.wo, reshape(g, a, {int64_t(L.head_dim_v) * L.n_head, T})), w.bo);
}

}  // namespace ls
