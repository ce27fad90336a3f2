#include "core/grammar/token_mask.h"

#include <algorithm>
#include <cstring>
#include <numeric>

namespace ls::grammar {

namespace {

// Complete, well-formed UTF-8 of printable ASCII other than '"' and '\\', or any non-ASCII
// character: what a JSON string takes without an escape.
bool plain_token(const std::string& t) {
    size_t i = 0, n = t.size();
    while (i < n) {
        unsigned char c = (unsigned char)t[i];
        if (c < 0x80) {
            if (c < 0x20 || c == 0x7F || c == '"' || c == '\\') return false;
            ++i;
            continue;
        }
        size_t len;
        unsigned char lo = 0x80, hi = 0xBF;  // the second byte's range
        if (c >= 0xC2 && c <= 0xDF) len = 2;
        else if (c >= 0xE0 && c <= 0xEF) { len = 3; if (c == 0xE0) lo = 0xA0; if (c == 0xED) hi = 0x9F; }
        else if (c >= 0xF0 && c <= 0xF4) { len = 4; if (c == 0xF0) lo = 0x90; if (c == 0xF4) hi = 0x8F; }
        else return false;
        if (i + len > n) return false;  // a character split off: walked exactly instead
        unsigned char c1 = (unsigned char)t[i + 1];
        if (c1 < lo || c1 > hi) return false;
        for (size_t k = 2; k < len; ++k)
            if (((unsigned char)t[i + k] & 0xC0) != 0x80) return false;
        i += len;
    }
    return true;
}

}  // namespace

TokenMask::TokenMask(std::vector<std::string> tokens, const std::vector<bool>& is_eog, const std::vector<bool>& is_special,
                     size_t cache_entries)
    : tokens_(std::move(tokens)), flags_(tokens_.size(), 0), capacity_(cache_entries) {
    for (size_t i = 0; i < tokens_.size(); ++i) {
        if (i < is_eog.size() && is_eog[i]) flags_[i] |= kEog;
        if (i < is_special.size() && is_special[i]) flags_[i] |= kSpecial;
        if (flags_[i] & kEog) eog_ids_.push_back(int32_t(i));
    }
    std::vector<int32_t> text, other;
    plain_bits_.assign(mask_words(), 0);
    for (size_t i = 0; i < tokens_.size(); ++i) {
        if (flags_[i] || tokens_[i].empty()) continue;
        if (tokens_[i].size() > 0xFFFF) throw Error("token mask: token " + std::to_string(i) + " longer than 65535 bytes");
        text.push_back(int32_t(i));
        if (plain_token(tokens_[i])) plain_bits_[i >> 5] |= 1u << (i & 31);
        else other.push_back(int32_t(i));
    }
    all_ = build_trie(std::move(text));
    other_ = build_trie(std::move(other));
    stats_.trie_nodes = all_.nodes.size() - 1;
}

// Sorted by bytes, neighbours share prefixes, so the trie comes out in preorder by keeping
// the path of the previous token.
TokenMask::Trie TokenMask::build_trie(std::vector<int32_t> order) const {
    Trie t;
    std::stable_sort(order.begin(), order.end(), [&](int32_t a, int32_t b) { return tokens_[size_t(a)] < tokens_[size_t(b)]; });
    std::vector<uint32_t> path;  // node index at each depth of the previous token
    const std::string* prev = nullptr;
    for (int32_t id : order) {
        const std::string& s = tokens_[size_t(id)];
        size_t lcp = 0;
        if (prev)
            while (lcp < prev->size() && lcp < s.size() && (*prev)[lcp] == s[lcp]) ++lcp;
        while (path.size() > lcp) {
            t.nodes[path.back()].end = uint32_t(t.nodes.size());
            path.pop_back();
        }
        for (size_t d = lcp; d < s.size(); ++d) {
            path.push_back(uint32_t(t.nodes.size()));
            t.nodes.push_back({0, uint32_t(t.ids.size()), uint16_t(d + 1), uint8_t(s[d])});
        }
        t.ids.push_back(id);  // the last node created is this token's: duplicates follow at once
        t.max_depth = std::max(t.max_depth, s.size());
        prev = &s;
    }
    while (!path.empty()) {
        t.nodes[path.back()].end = uint32_t(t.nodes.size());
        path.pop_back();
    }
    t.nodes.push_back({uint32_t(t.nodes.size() + 1), uint32_t(t.ids.size()), 0, 0});  // sentinel
    return t;
}

void TokenMask::walk(const Trie& t, const Matcher& m, uint32_t* bits) const {
    detail::Automaton& a = m.automaton();
    std::vector<uint32_t> st(t.max_depth + 1);
    st[0] = m.state();
    const size_t n = t.nodes.size() - 1;
    const Node* nodes = t.nodes.data();
    const int32_t* ids = t.ids.data();
    for (size_t i = 0; i < n;) {
        const Node& nd = nodes[i];
        int32_t s = a.next(st[nd.depth - 1], nd.byte);
        if (s < 0) {
            i = nd.end;
            continue;
        }
        st[nd.depth] = uint32_t(s);
        for (uint32_t k = nd.tok_begin, e = nodes[i + 1].tok_begin; k < e; ++k)
            bits[uint32_t(ids[k]) >> 5] |= 1u << (uint32_t(ids[k]) & 31);
        ++i;
    }
}

void TokenMask::compute(const Matcher& m, uint32_t* bits) const {
    detail::Automaton& a = m.automaton();
    if (a.plain_loop(m.state())) {
        std::memcpy(bits, plain_bits_.data(), mask_words() * sizeof(uint32_t));
        walk(other_, m, bits);
    } else {
        std::memset(bits, 0, mask_words() * sizeof(uint32_t));
        walk(all_, m, bits);
    }
    if (a.accepting(m.state()))
        for (int32_t id : eog_ids_) bits[uint32_t(id) >> 5] |= 1u << (uint32_t(id) & 31);
}

void TokenMask::fill_mask(const Matcher& m, uint32_t* bits) const {
    if (m.is_ended()) {
        std::memset(bits, 0, mask_words() * sizeof(uint32_t));
        return;
    }
    // A copy: the walk below interns states, which may move the one holding the key.
    const std::string key = m.automaton().key(m.state());
    {
        std::lock_guard<std::mutex> lock(mu_);
        auto it = index_.find(key);
        if (it != index_.end()) {
            lru_.splice(lru_.begin(), lru_, it->second);
            std::memcpy(bits, it->second->second.data(), mask_words() * sizeof(uint32_t));
            ++stats_.hits;
            return;
        }
        ++stats_.misses;
    }
    compute(m, bits);
    if (capacity_ == 0) return;
    std::lock_guard<std::mutex> lock(mu_);
    if (index_.count(key)) return;  // another thread filled it meanwhile
    lru_.emplace_front(key, std::vector<uint32_t>(bits, bits + mask_words()));
    index_.emplace(key, lru_.begin());
    if (lru_.size() > capacity_) {
        index_.erase(lru_.back().first);
        lru_.pop_back();
    }
}

bool TokenMask::allows(const Matcher& m, int32_t id) const {
    if (id < 0 || size_t(id) >= tokens_.size() || m.is_ended()) return false;
    if (flags_[size_t(id)] & kEog) return m.is_accepting();
    if (flags_[size_t(id)] & kSpecial) return false;
    const std::string& t = tokens_[size_t(id)];
    if (t.empty()) return false;
    detail::Automaton& a = m.automaton();
    int32_t s = int32_t(m.state());
    for (char c : t) {
        s = a.next(uint32_t(s), uint8_t(c));
        if (s < 0) return false;
    }
    return true;
}

TokenMask::Stats TokenMask::stats() const {
    std::lock_guard<std::mutex> lock(mu_);
    return stats_;
}

}  // namespace ls::grammar
