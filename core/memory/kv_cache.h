// KV memory: per layer a K and a V cache tensor of n_seq slots x R rows, ring-indexed as
// SEMANTICS.md section 1 says (windowed layers R = min(n_ctx, W + B), full layers R = n_ctx).
#pragma once
#include <algorithm>
#include <memory>
#include <vector>

#include "core/ir/backend.h"

namespace ls {

struct KvLayerSpec {
    int64_t k_row = 0;  // n_head_kv * head_dim_k
    int64_t v_row = 0;  // n_head_kv * head_dim_v
    int32_t window = 0; // 0 = full attention
    // V is the first v_row values of each K row, stored once (multi-head latent attention: the
    // key is the compressed latent and its rope part, the value the latent alone). No V
    // buffer; v(il) is a view of k(il) in K's type.
    bool v_in_k = false;
};

struct KvCacheConfig {
    int64_t n_ctx = 0;     // positions per sequence
    int32_t n_seq = 1;     // sequence slots
    int64_t n_ubatch = 0;  // B: the largest ubatch, the ring's headroom
    DType type_k = DType::F16;
    DType type_v = DType::F16;
};

// The ring rows of a layer (SEMANTICS.md section 1), and the bytes its K and V take.
int64_t kv_ring_rows(const KvLayerSpec& L, const KvCacheConfig& cfg);
size_t kv_layer_bytes(const KvLayerSpec& L, const KvCacheConfig& cfg);

class KvCache {
public:
    KvCache(Backend& be, const std::vector<KvLayerSpec>& layers, const KvCacheConfig& cfg);
    // Each layer's rows on its own backend (a model placed over several devices keeps a
    // layer's cache beside its weights): one buffer per distinct backend.
    KvCache(const std::vector<Backend*>& layer_backends, const std::vector<KvLayerSpec>& layers, const KvCacheConfig& cfg);
    int64_t ring_rows(int il) const { return rows_[il]; }
    int32_t window(int il) const { return specs_[il].window; }
    Tensor* k(int il) { return &k_[il]; }
    Tensor* v(int il) { return &v_[il]; }
    // Whether layer il's V is a view of its K (KvLayerSpec::v_in_k): nothing of its own to
    // write, copy, save or load.
    bool v_in_k(int il) const { return specs_[size_t(il)].v_in_k; }
    const Tensor* k(int il) const { return &k_[il]; }
    const Tensor* v(int il) const { return &v_[il]; }
    const KvCacheConfig& config() const { return cfg_; }
    size_t bytes() const;

    // Length (next position) of each sequence slot.
    int64_t seq_len(int s) const { return len_.at(s); }
    // n is also the ring's new frontier if past it (see top_).
    void set_seq_len(int s, int64_t n) {
        len_.at(s) = n;
        top_.at(s) = std::max(top_.at(s), n);
    }
    // Empties every slot with one buffer fill.
    void clear();
    // Whether seq_rm(s, p0) would succeed: every windowed layer's ring still holds the keys
    // positions p0.. will read, max(0, p0-W+1)..p0-1.
    bool can_rm(int s, int64_t p0) const;
    // Drops positions >= p0 of slot s. False (and nothing changed) when a windowed layer's
    // ring no longer holds the W-1 positions before p0.
    bool seq_rm(int s, int64_t p0);
    // Makes slot dst a copy of slot src's positions [0, p1) (p1 < 0: all of them): every
    // layer's rows are copied device-side, and dst's old contents are dropped. False (and
    // nothing changed) when src could not be truncated to p1 (see can_rm).
    bool seq_cp(int src, int dst, int64_t p1 = -1);
    // Empties every slot but s.
    void seq_keep(int s);

    // A sequence's memory as bytes (Session::save_seq / load_seq). The ring's frontier (top_):
    // one past the highest position written since the slot last started at 0. The ring of
    // layer il holds positions max(0, top - R) .. seq_len - 1.
    int64_t seq_top(int s) const { return top_.at(size_t(s)); }
    // A loaded sequence: its length and its frontier (>= len), set as they are.
    void set_seq_extent(int s, int64_t len, int64_t top);
    // The bytes of layer il's K rows (v: its V rows) of slot s at positions [p0, p1), in
    // position order, row_bytes of the cache type each; the ring must hold them (p1 - p0 <= R).
    void read_rows(int il, bool v, int s, int64_t p0, int64_t p1, void* dst) const;
    void write_rows(int il, bool v, int s, int64_t p0, int64_t p1, const void* src);

private:
    std::vector<Backend*> be_;  // per layer
    KvCacheConfig cfg_;
    std::vector<KvLayerSpec> specs_;
    std::vector<int64_t> rows_;
    std::vector<Tensor> k_, v_;
    std::vector<std::unique_ptr<Buffer>> buffers_;  // one per distinct backend
    std::vector<int64_t> len_;
    // Per slot, one past the highest position written since the slot last started at 0. A
    // rollback (seq_rm after speculative guesses, a shorter reused prefix) lowers len_ but not
    // the rows those positions overwrote: a windowed ring holds positions top-R.. of the
    // sequence, not len-R.., until writes pass top again.
    std::vector<int64_t> top_;

    void check_slot(int s, const char* what) const;
};

}  // namespace ls
