#include "core/memory/kv_cache.h"

#include <algorithm>
#include <stdexcept>
#include <string>
#include <tuple>

#include "core/quant/quant.h"

namespace ls {

int64_t kv_ring_rows(const KvLayerSpec& L, const KvCacheConfig& cfg) {
    if (L.k_row == 0 && L.v_row == 0) return 0;
    // The +B headroom: a ubatch stores all its rows before its first query reads, and
    // that query still needs W-1 older keys.
    return L.window > 0 ? std::min<int64_t>(cfg.n_ctx, L.window + cfg.n_ubatch) : cfg.n_ctx;
}

size_t kv_layer_bytes(const KvLayerSpec& L, const KvCacheConfig& cfg) {
    const int64_t R = kv_ring_rows(L, cfg);
    if (R == 0) return 0;
    auto al = [](size_t n) { return (n + 255) / 256 * 256; };
    return al(row_bytes(cfg.type_k, L.k_row) * size_t(R * cfg.n_seq)) +
           (L.v_in_k ? 0 : al(row_bytes(cfg.type_v, L.v_row) * size_t(R * cfg.n_seq)));
}

KvCache::KvCache(Backend& be, const std::vector<KvLayerSpec>& layers, const KvCacheConfig& cfg)
    : KvCache(std::vector<Backend*>(layers.size(), &be), layers, cfg) {}

KvCache::KvCache(const std::vector<Backend*>& layer_backends, const std::vector<KvLayerSpec>& layers, const KvCacheConfig& cfg)
    : be_(layer_backends), cfg_(cfg), specs_(layers), len_(cfg.n_seq, 0), top_(cfg.n_seq, 0) {
    if (be_.size() != layers.size())
        throw std::invalid_argument("kv cache: " + std::to_string(be_.size()) + " backends for " + std::to_string(layers.size()) + " layers");
    if (cfg.n_ctx <= 0) throw std::invalid_argument("kv cache: the context size must be at least 1, got " + std::to_string(cfg.n_ctx));
    if (cfg.n_seq <= 0) throw std::invalid_argument("kv cache: the number of sequences must be at least 1, got " + std::to_string(cfg.n_seq));
    if (cfg.n_ubatch <= 0) throw std::invalid_argument("kv cache: the ubatch size must be at least 1, got " + std::to_string(cfg.n_ubatch));
    // One sequence never has more than n_ctx tokens in a ubatch, so the ring of a full
    // layer (n_ctx rows) always holds them; a larger ubatch would only hide a caller's bug.
    if (cfg.n_ubatch > cfg.n_ctx)
        throw std::invalid_argument("kv cache: a ubatch of " + std::to_string(cfg.n_ubatch) + " tokens exceeds the context of " +
                                    std::to_string(cfg.n_ctx) + " (use n_ubatch <= n_ctx)");
    for (auto [type, what] : {std::pair{cfg.type_k, "K"}, std::pair{cfg.type_v, "V"}})
        if (type != DType::F32 && type != DType::F16 && type != DType::Q8_0 && type != DType::Q4_0)
            throw std::invalid_argument(std::string("kv cache: ") + what + " cache type " + dtype_name(type) +
                                        " is not supported (use f32, f16, q8_0 or q4_0)");
    // Offsets run per backend: each backend's layers share one buffer.
    std::vector<Backend*> owners;
    std::vector<size_t> totals;
    auto slot_of = [&](Backend* b) {
        for (size_t i = 0; i < owners.size(); ++i)
            if (owners[i] == b) return i;
        owners.push_back(b);
        totals.push_back(0);
        return owners.size() - 1;
    };
    std::vector<size_t> layer_slot(layers.size(), 0);
    k_.resize(layers.size());
    v_.resize(layers.size());
    for (size_t il = 0; il < layers.size(); ++il) {
        const KvLayerSpec& L = layers[il];
        if (L.k_row == 0 && L.v_row == 0) {  // a layer without attention (hybrid models): no rows
            rows_.push_back(0);
            layer_slot[il] = slot_of(be_[il]);
            for (Tensor* t : {&k_[il], &v_[il]}) {
                t->ne[0] = t->ne[1] = 0;
                set_contiguous_strides(*t);
                t->kind = TensorKind::Persistent;
            }
            continue;
        }
        if (L.k_row <= 0 || L.v_row <= 0 || L.window < 0)
            throw std::invalid_argument("kv cache: layer " + std::to_string(il) + " has an invalid geometry");
        if (L.v_in_k && L.v_row > L.k_row)
            throw std::invalid_argument("kv cache: layer " + std::to_string(il) + "'s V (" + std::to_string(L.v_row) +
                                        " values) cannot be a part of its K rows of " + std::to_string(L.k_row));
        for (auto [type, row, what] : {std::tuple{cfg.type_k, L.k_row, "K"}, std::tuple{L.v_in_k ? cfg.type_k : cfg.type_v, L.v_row, "V"}})
            if (row % block_size(type) != 0)
                throw std::invalid_argument(std::string("kv cache: ") + what + " cache type " + dtype_name(type) +
                                            " stores blocks of " + std::to_string(block_size(type)) + " values, but layer " +
                                            std::to_string(il) + " has " + what + " rows of " + std::to_string(row) +
                                            " (choose f16 or f32 for this model)");
        const int64_t R = kv_ring_rows(L, cfg);
        rows_.push_back(R);
        const size_t slot = layer_slot[il] = slot_of(be_[il]);
        size_t& total = totals[slot];
        for (auto [t, type, row] : {std::tuple{&k_[il], cfg.type_k, L.k_row}, std::tuple{&v_[il], cfg.type_v, L.v_row}}) {
            if (L.v_in_k && t == &v_[il]) {  // the first v_row values of each K row
                *t = k_[il];
                t->ne[0] = row;
                t->name = "cache_v." + std::to_string(il) + " (in K)";
                continue;
            }
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
    for (size_t i = 0; i < owners.size(); ++i) buffers_.push_back(owners[i]->alloc(std::max<size_t>(totals[i], 256)));
    for (size_t il = 0; il < layers.size(); ++il)
        k_[il].buffer = v_[il].buffer = buffers_[layer_slot[il]].get();
    clear();
}

size_t KvCache::bytes() const {
    size_t n = 0;
    for (const auto& b : buffers_) n += b->size;
    return n;
}

void KvCache::clear() {
    for (auto& b : buffers_) b->backend->fill(*b, 0, b->size, 0);
    std::fill(len_.begin(), len_.end(), 0);
    std::fill(top_.begin(), top_.end(), 0);
}

void KvCache::check_slot(int s, const char* what) const {
    if (s < 0 || s >= cfg_.n_seq)
        throw std::out_of_range(std::string(what) + ": sequence " + std::to_string(s) + " outside [0, " +
                                std::to_string(cfg_.n_seq) + ")");
}

bool KvCache::can_rm(int s, int64_t p0) const {
    check_slot(s, "seq_rm");
    if (p0 < 0) throw std::out_of_range("seq_rm: negative position " + std::to_string(p0));
    const int64_t n = len_[size_t(s)];
    if (p0 >= n || p0 == 0) return true;  // nothing dropped, or a restart that needs no key
    // Rows are written in position order, so the ring holds positions top-R..n-1, where top
    // (>= n) is the furthest position ever written: rolled-back positions overwrote the
    // oldest rows too.
    const int64_t top = std::max(n, top_[size_t(s)]);
    for (size_t il = 0; il < specs_.size(); ++il) {
        const int64_t W = specs_[il].window, R = rows_[il];
        // The keys p0 will need, max(0,p0-W+1)..p0-1, must still be in the ring (for a
        // wrapped ring never rolled back this is n - p0 <= R - W + 1).
        if (W > 0 && std::max<int64_t>(0, p0 - W + 1) < top - R) return false;
    }
    return true;
}

bool KvCache::seq_rm(int s, int64_t p0) {
    if (!can_rm(s, p0)) return false;
    // Rows at positions >= p0 stay as they are: a later query at p reads only keys <= p,
    // and every such key from p0 on is rewritten before it is read.
    len_[size_t(s)] = std::min(len_[size_t(s)], p0);
    if (p0 == 0) top_[size_t(s)] = 0;  // a restart rewrites every key before reading it
    return true;
}

bool KvCache::seq_cp(int src, int dst, int64_t p1) {
    check_slot(src, "seq_cp");
    check_slot(dst, "seq_cp");
    if (p1 < 0 || p1 > len_[size_t(src)]) p1 = len_[size_t(src)];
    if (!can_rm(src, p1)) return false;
    if (src == dst) return seq_rm(dst, p1);
    // Slot s owns rows [s*R, (s+1)*R) of every layer's K and V: one contiguous range each.
    for (size_t il = 0; il < specs_.size(); ++il)
        for (Tensor* t : {&k_[il], &v_[il]}) {
            if (t == &v_[il] && specs_[il].v_in_k) continue;  // copied with K
            const size_t slot_bytes = size_t(rows_[il]) * t->nb[1];
            if (slot_bytes) be_[il]->copy(*t->buffer, t->offset + size_t(dst) * slot_bytes, t->offset + size_t(src) * slot_bytes, slot_bytes);
        }
    top_[size_t(dst)] = p1 == 0 ? 0 : std::max(len_[size_t(src)], top_[size_t(src)]);  // the copied rows' history
    len_[size_t(dst)] = p1;
    return true;
}

void KvCache::seq_keep(int s) {
    check_slot(s, "seq_keep");
    // Emptied slots keep their bytes: a sequence restarted at position 0 rewrites every key
    // before reading it.
    for (int i = 0; i < cfg_.n_seq; ++i)
        if (i != s) len_[size_t(i)] = top_[size_t(i)] = 0;
}

void KvCache::set_seq_extent(int s, int64_t len, int64_t top) {
    check_slot(s, "set_seq_extent");
    if (len < 0 || len > cfg_.n_ctx || top < len)
        throw std::out_of_range("kv cache: a sequence of " + std::to_string(len) + " positions (frontier " + std::to_string(top) +
                                ") does not fit a context of " + std::to_string(cfg_.n_ctx));
    len_[size_t(s)] = len;
    top_[size_t(s)] = top;
}

namespace {
// The ring rows of positions [p0, p1) of one slot as at most two contiguous runs: (first row, rows).
std::vector<std::pair<int64_t, int64_t>> ring_runs(int64_t R, int64_t p0, int64_t p1) {
    std::vector<std::pair<int64_t, int64_t>> runs;
    for (int64_t p = p0; p < p1;) {
        const int64_t r = p % R, n = std::min(p1 - p, R - r);
        runs.emplace_back(r, n);
        p += n;
    }
    return runs;
}
}  // namespace

void KvCache::read_rows(int il, bool v, int s, int64_t p0, int64_t p1, void* dst) const {
    check_slot(s, "read_rows");
    if (v && v_in_k(il)) throw std::invalid_argument("kv cache: layer " + std::to_string(il) + "'s V is a part of its K rows");
    const Tensor& t = v ? v_.at(size_t(il)) : k_.at(size_t(il));
    const int64_t R = rows_.at(size_t(il));
    if (p0 < 0 || p1 < p0 || p1 - p0 > R) throw std::out_of_range("kv cache: positions outside the ring of layer " + std::to_string(il));
    auto* out = static_cast<uint8_t*>(dst);
    for (auto [r, n] : ring_runs(R, p0, p1)) {
        const size_t bytes = size_t(n) * t.nb[1];
        be_[size_t(il)]->download(*t.buffer, t.offset + size_t(int64_t(s) * R + r) * t.nb[1], out, bytes);
        out += bytes;
    }
}

void KvCache::write_rows(int il, bool v, int s, int64_t p0, int64_t p1, const void* src) {
    check_slot(s, "write_rows");
    if (v && v_in_k(il)) throw std::invalid_argument("kv cache: layer " + std::to_string(il) + "'s V is a part of its K rows");
    Tensor& t = v ? v_.at(size_t(il)) : k_.at(size_t(il));
    const int64_t R = rows_.at(size_t(il));
    if (p0 < 0 || p1 < p0 || p1 - p0 > R) throw std::out_of_range("kv cache: positions outside the ring of layer " + std::to_string(il));
    const auto* in = static_cast<const uint8_t*>(src);
    for (auto [r, n] : ring_runs(R, p0, p1)) {
        const size_t bytes = size_t(n) * t.nb[1];
        be_[size_t(il)]->upload(*t.buffer, t.offset + size_t(int64_t(s) * R + r) * t.nb[1], in, bytes);
        in += bytes;
    }
}

}  // namespace ls
