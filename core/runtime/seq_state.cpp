// One sequence's memory as bytes: Session::save_seq, seq_state_bytes and load_seq.
//
// Layout (little-endian, as the host writes it; every integer fixed-width):
//   "LSSEQST\0" (8 bytes), u32 version (1)
//   u64 model hash (FNV-1a of the GGUF's bytes before its tensor data: header, metadata,
//       tensor table), u64 model file size
//   u32 n_layer, u32 K cache type, u32 V cache type (GGUF type ids)
//   u64 n tokens (the sequence's length), u64 frontier (KvCache::seq_top), n x i32 tokens
//   per layer: i64 K row bytes, i64 V row bytes (0 and 0: no KV rows), i64 first position
//     saved p0 (the rows of positions p0 .. n-1 follow, K then V, in position order),
//     u64 recurrent state bytes (conv, then scan; 0: not recurrent) and those bytes
//   "LSSEQEND" (8 bytes)
#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <string>

#include "core/runtime/session.h"

namespace ls {

namespace {

constexpr char kMagic[8] = {'L', 'S', 'S', 'E', 'Q', 'S', 'T', '\0'};
constexpr char kEnd[8] = {'L', 'S', 'S', 'E', 'Q', 'E', 'N', 'D'};
constexpr uint32_t kVersion = 1;

// The model's identity: its GGUF's bytes before the tensor data (metadata and tensor table).
uint64_t model_hash(const Model& m) {
    const GgufFile& f = m.gguf();
    size_t head = f.size();
    for (const GgufTensorInfo& t : f.tensors()) head = std::min(head, size_t(t.data - f.base()) - size_t(t.offset));
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < head; ++i) h = (h ^ f.base()[i]) * 1099511628211ull;
    return h;
}

struct Writer {
    std::vector<uint8_t>& out;
    void bytes(const void* p, size_t n) {
        const auto* b = static_cast<const uint8_t*>(p);
        out.insert(out.end(), b, b + n);
    }
    template <class T>
    void put(T v) {
        bytes(&v, sizeof v);
    }
    uint8_t* grow(size_t n) {
        out.resize(out.size() + n);
        return out.data() + out.size() - n;
    }
};

struct Reader {
    const uint8_t* p;
    size_t n, at = 0;
    const uint8_t* take(size_t k, const char* what) {
        if (k > n - at)
            throw std::invalid_argument(std::string("sequence state: truncated (") + what + " runs past the end of its " +
                                        std::to_string(n) + " bytes)");
        const uint8_t* r = p + at;
        at += k;
        return r;
    }
    template <class T>
    T get(const char* what) {
        T v;
        std::memcpy(&v, take(sizeof v, what), sizeof v);
        return v;
    }
};

}  // namespace

size_t Session::seq_state_bytes(int s) const {
    if (s < 0 || s >= p_.n_seq) throw std::out_of_range("sequence " + std::to_string(s) + " outside [0, " + std::to_string(p_.n_seq) + ")");
    const int64_t n = kv_->seq_len(s), top = std::max(n, kv_->seq_top(s));
    size_t bytes = 8 + 4 + 8 + 8 + 3 * 4 + 8 + 8 + size_t(n) * 4;
    for (int il = 0; il < int(m_.hparams().n_layer); ++il) {
        bytes += 3 * 8 + 8;
        if (const int64_t R = kv_->ring_rows(il); R > 0) {
            const int64_t p0 = std::max<int64_t>(0, top - R);
            bytes += size_t(n - std::min(n, p0)) * (kv_->k(il)->nb[1] + (kv_->v_in_k(il) ? 0 : kv_->v(il)->nb[1]));
        }
        if (rs_) bytes += rs_->slot_bytes(il);
    }
    return bytes + 8;
}

std::vector<uint8_t> Session::save_seq(int s) const {
    if (link_) throw std::invalid_argument("sequence state: not available for a model placed over ranks (mpirun)");
    if (m_.rope_axes() > 1 && s >= 0 && s < p_.n_seq)
        for (size_t i = 0; i < rope_top_[size_t(s)].size(); ++i)
            if (rope_top_[size_t(s)][i] != int32_t(i))
                throw std::invalid_argument("sequence state: sequence " + std::to_string(s) + " holds an image, whose " + m_.hparams().arch +
                                            " rope positions a saved state does not keep (not supported yet)");
    const size_t total = seq_state_bytes(s);
    std::vector<uint8_t> out;
    out.reserve(total);
    Writer w{out};
    const int64_t n = kv_->seq_len(s), top = std::max(n, kv_->seq_top(s));
    w.bytes(kMagic, 8);
    w.put(kVersion);
    w.put(model_hash(m_));
    w.put(uint64_t(m_.gguf().size()));
    w.put(uint32_t(m_.hparams().n_layer));
    w.put(uint32_t(p_.type_k));
    w.put(uint32_t(p_.type_v));
    w.put(uint64_t(n));
    w.put(uint64_t(top));
    w.bytes(cached_[size_t(s)].data(), size_t(n) * 4);
    for (int il = 0; il < int(m_.hparams().n_layer); ++il) {
        const int64_t R = kv_->ring_rows(il);
        const int64_t kb = R > 0 ? int64_t(kv_->k(il)->nb[1]) : 0, vb = R > 0 && !kv_->v_in_k(il) ? int64_t(kv_->v(il)->nb[1]) : 0;
        const int64_t p0 = R > 0 ? std::min(n, std::max<int64_t>(0, top - R)) : n;
        w.put(kb);
        w.put(vb);
        w.put(p0);
        if (R > 0 && n > p0) {
            kv_->read_rows(il, false, s, p0, n, w.grow(size_t(n - p0) * size_t(kb)));
            if (vb) kv_->read_rows(il, true, s, p0, n, w.grow(size_t(n - p0) * size_t(vb)));
        }
        const size_t rb = rs_ ? rs_->slot_bytes(il) : 0;
        w.put(uint64_t(rb));
        if (rb) rs_->read_slot(il, s, w.grow(rb));
    }
    w.bytes(kEnd, 8);
    if (out.size() != total) throw std::logic_error("sequence state: wrote " + std::to_string(out.size()) + " bytes, counted " + std::to_string(total));
    return out;
}

void Session::load_seq(int s, const uint8_t* data, size_t size) {
    if (link_) throw std::invalid_argument("sequence state: not available for a model placed over ranks (mpirun)");
    if (s < 0 || s >= p_.n_seq) throw std::out_of_range("sequence " + std::to_string(s) + " outside [0, " + std::to_string(p_.n_seq) + ")");
    if (!data && size) throw std::invalid_argument("sequence state: no data");
    Reader r{data, size};
    // Everything is read and checked first; the sequence changes only after.
    if (std::memcmp(r.take(8, "the header"), kMagic, 8) != 0) throw std::invalid_argument("sequence state: not a lockstep sequence state");
    if (const uint32_t v = r.get<uint32_t>("the version"); v != kVersion)
        throw std::invalid_argument("sequence state: version " + std::to_string(v) + ", this build reads version " + std::to_string(kVersion));
    const uint64_t hash = r.get<uint64_t>("the model hash"), file_size = r.get<uint64_t>("the model size");
    if (hash != model_hash(m_) || file_size != m_.gguf().size())
        throw std::invalid_argument("sequence state: saved from another model (its GGUF's metadata, tensors or size differ from this " +
                                    m_.hparams().arch + " model's)");
    const uint32_t n_layer = r.get<uint32_t>("the layer count");
    if (n_layer != uint32_t(m_.hparams().n_layer))
        throw std::invalid_argument("sequence state: " + std::to_string(n_layer) + " layers, the model has " + std::to_string(m_.hparams().n_layer));
    const uint32_t tk = r.get<uint32_t>("the K type"), tv = r.get<uint32_t>("the V type");
    if (tk != uint32_t(p_.type_k) || tv != uint32_t(p_.type_v))
        throw std::invalid_argument(std::string("sequence state: saved with K/V cache types ") + dtype_name(DType(tk)) + "/" + dtype_name(DType(tv)) +
                                    ", this session has " + dtype_name(p_.type_k) + "/" + dtype_name(p_.type_v));
    const uint64_t n = r.get<uint64_t>("the length"), top = r.get<uint64_t>("the frontier");
    if (top < n || top > uint64_t(1) << 40) throw std::invalid_argument("sequence state: damaged (frontier " + std::to_string(top) + " before length " + std::to_string(n) + ")");
    if (n > uint64_t(p_.n_ctx))
        throw std::length_error("sequence state: " + std::to_string(n) + " tokens, more than the context of " + std::to_string(p_.n_ctx) + " holds");
    std::vector<int32_t> tokens(n);
    const uint8_t* saved_tokens = r.take(size_t(n) * 4, "the tokens");
    if (n) std::memcpy(tokens.data(), saved_tokens, size_t(n) * 4);
    for (int32_t t : tokens)
        if (t < 0 || t >= m_.hparams().n_vocab) throw std::invalid_argument("sequence state: damaged (token id " + std::to_string(t) + " outside the vocabulary)");
    struct Layer {
        int64_t p0 = 0;
        const uint8_t *k = nullptr, *v = nullptr, *rec = nullptr;
    };
    std::vector<Layer> layers(n_layer);
    for (uint32_t il = 0; il < n_layer; ++il) {
        Layer& L = layers[il];
        const int64_t kb = r.get<int64_t>("a layer's row sizes"), vb = r.get<int64_t>("a layer's row sizes");
        L.p0 = r.get<int64_t>("a layer's first position");
        const int64_t R = kv_->ring_rows(int(il));
        const int64_t want_k = R > 0 ? int64_t(kv_->k(int(il))->nb[1]) : 0, want_v = R > 0 && !kv_->v_in_k(int(il)) ? int64_t(kv_->v(int(il))->nb[1]) : 0;
        if (kb != want_k || vb != want_v)
            throw std::invalid_argument("sequence state: layer " + std::to_string(il) + " has K/V rows of " + std::to_string(kb) + "/" +
                                        std::to_string(vb) + " bytes, this session's " + std::to_string(want_k) + "/" + std::to_string(want_v));
        if (L.p0 < 0 || uint64_t(L.p0) > n) throw std::invalid_argument("sequence state: damaged (layer " + std::to_string(il) + "'s first position)");
        if (R > 0) {
            L.k = r.take(size_t(int64_t(n) - L.p0) * size_t(kb), "a layer's K rows");
            L.v = r.take(size_t(int64_t(n) - L.p0) * size_t(vb), "a layer's V rows");
            // A windowed layer whose positions p0.. the ring of this session cannot all hold
            // keeps the latest; a full-attention layer must hold every position from 0.
            if (L.p0 > 0 && kv_->window(int(il)) == 0)
                throw std::invalid_argument("sequence state: damaged (full-attention layer " + std::to_string(il) + " saved from position " + std::to_string(L.p0) + ")");
        }
        const uint64_t rb = r.get<uint64_t>("a layer's recurrent state size");
        const size_t want_r = rs_ ? rs_->slot_bytes(int(il)) : 0;
        if (rb != want_r)
            throw std::invalid_argument("sequence state: layer " + std::to_string(il) + " has " + std::to_string(rb) +
                                        " bytes of recurrent state, this model " + std::to_string(want_r));
        if (rb) L.rec = r.take(size_t(rb), "a layer's recurrent state");
    }
    if (std::memcmp(r.take(8, "the end mark"), kEnd, 8) != 0) throw std::invalid_argument("sequence state: damaged (no end mark)");
    if (r.at != size) throw std::invalid_argument("sequence state: " + std::to_string(size - r.at) + " bytes after its end");

    // Each ring keeps what it can of the saved positions (the latest); the frontier is set so
    // that the ring claims no position it does not hold (KvCache::can_rm reads it).
    const int64_t len = int64_t(n);
    int64_t frontier = len;
    for (uint32_t il = 0; il < n_layer; ++il) {
        const int64_t R = kv_->ring_rows(int(il));
        if (R == 0) continue;
        const int64_t lo = std::max(layers[il].p0, len - R);
        if (lo > 0) frontier = std::max(frontier, lo + R);
    }
    seq_rm(s, 0);
    for (uint32_t il = 0; il < n_layer; ++il) {
        const Layer& L = layers[il];
        const int64_t R = kv_->ring_rows(int(il));
        if (R > 0 && len > L.p0) {
            const int64_t lo = std::max(L.p0, len - R), skip = lo - L.p0;
            kv_->write_rows(int(il), false, s, lo, len, L.k + size_t(skip) * kv_->k(int(il))->nb[1]);
            if (!kv_->v_in_k(int(il))) kv_->write_rows(int(il), true, s, lo, len, L.v + size_t(skip) * kv_->v(int(il))->nb[1]);
        }
        if (L.rec) rs_->write_slot(int(il), s, L.rec);
    }
    kv_->set_seq_extent(s, len, frontier);
    cached_[size_t(s)] = std::move(tokens);
    // (save_seq keeps images out of a multi-axis-rope model's states: text positions are plain)
    rope_top_[size_t(s)].clear();
    if (m_.rope_axes() > 1)
        for (int32_t i = 0; i < int32_t(len); ++i) rope_top_[size_t(s)].push_back(i);
    for (auto& c : ckpt_pos_) c[size_t(s)] = -1;
}

}  // namespace ls
