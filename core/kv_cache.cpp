#include "core/kv_cache.h"

#include <algorithm>
#include <stdexcept>

namespace ls {

KvCache::KvCache(Backend& be, const std::vector<KvLayerSpec>& layers, const KvCacheConfig& cfg)
    : be_(be), cfg_(cfg), specs_(layers), len_(cfg.n_seq, 0) {
    if (cfg.n_ctx <= 0 || cfg.n_seq <= 0 || cfg.n_ubatch <= 0) throw std::invalid_argument("kv cache: n_ctx, n_seq and n_ubatch must be positive");
    size_t total = 0;
    k_.resize(layers.size());
    v_.resize(layers.size());
    for (size_t il = 0; il < layers.size(); ++il) {
        const KvLayerSpec& L = layers[il];
        // The +B headroom: a ubatch stores all its rows before its first query reads, and
        // that query still needs W-1 older keys.
        int64_t R = L.window > 0 ? std::min<int64_t>(cfg.n_ctx, L.window + cfg.n_ubatch) : cfg.n_ctx;
        rows_.push_back(R);
        for (auto [t, type, row] : {std::tuple{&k_[il], cfg.type_k, L.k_row}, std::tuple{&v_[il], cfg.type_v, L.v_row}}) {
            t->type = type;
            t->ne[0] = row;
            t->ne[1] = R * cfg.n_seq;
            set_contiguous_strides(*t);
            t->kind = TensorKind::Persistent;
            t->offset = total;
            t->name = (t == &k_[il] ? "cache_k." : "cache_v.") + std::to_string(il);
            total += (t->nbytes() + 255) / 256 * 256;
        }
    }
    buffer_ = be.alloc(total);
    for (size_t il = 0; il < layers.size(); ++il) k_[il].buffer = v_[il].buffer = buffer_.get();
    clear();
}

void KvCache::clear() {
    be_.fill(*buffer_, 0, buffer_->size, 0);
    std::fill(len_.begin(), len_.end(), 0);
}

bool KvCache::seq_rm(int s, int64_t p0) {
    int64_t& n = len_.at(s);
    if (p0 < 0) throw std::out_of_range("seq_rm: negative position");
    if (p0 >= n) return true;
    for (size_t il = 0; il < specs_.size(); ++il) {
        const int64_t W = specs_[il].window, R = rows_[il];
        // The keys p0 will need, max(0, p0-W+1)..p0-1, must still be in the ring, which holds
        // positions n-R..n-1 (for a wrapped ring this is n - p0 <= R - W + 1). For p0 = 0 no
        // key is needed: restarting a sequence always succeeds.
        if (W > 0 && p0 > 0 && std::max<int64_t>(0, p0 - W + 1) < n - R) return false;
    }
    // Rows at positions >= p0 stay as they are: a later query at p reads only keys <= p,
    // and every such key from p0 on is rewritten before it is read.
    n = p0;
    return true;
}

}  // namespace ls
