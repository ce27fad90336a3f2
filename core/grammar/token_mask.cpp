#include "core/grammar/token_mask.h"

#include <algorithm>
#include <cstring>
#include <numeric>

namespace ls::grammar {

TokenMask::TokenMask(std::vector<std::string> tokens, const std::vector<bool>& is_eog, const std::vector<bool>& is_special,
                     size_t cache_entries)
    : tokens_(std::move(tokens)), flags_(tokens_.size(), 0), capacity_(cache_entries) {
    for (size_t i = 0; i < tokens_.size(); ++i) {
        if (i < is_eog.size() && is_eog[i]) flags_[i] |= kEog;
        if (i < is_special.size() && is_special[i]) flags_[i] |= kSpecial;
        if (flags_[i] & kEog) eog_ids_.push_back(int32_t(i));
    }
    // The text tokens, sorted by bytes: neighbours share prefixes, so the trie comes out in
    // preorder by keeping the path of the previous token.
    std::vector<int32_t> order;
    for (size_t i = 0; i < tokens_.size(); ++i)
        if (!flags_[i] && !tokens_[i].empty()) order.push_back(int32_t(i));
    std::stable_sort(order.begin(), order.end(), [&](int32_t a, int32_t b) { return tokens_[size_t(a)] < tokens_[size_t(b)]; });
    std::vector<uint32_t> path;  // node index at each depth of the previous token
    const std::string* prev = nullptr;
    for (int32_t id : order) {
        const std::string& t = tokens_[size_t(id)];
        if (t.size() > 0xFFFF) throw Error("token mask: token " + std::to_string(id) + " longer than 65535 bytes");
        size_t lcp = 0;
        if (prev)
            while (lcp < prev->size() && lcp < t.size() && (*prev)[lcp] == t[lcp]) ++lcp;
        while (path.size() > lcp) {
            nodes_[path.back()].end = uint32_t(nodes_.size());
            path.pop_back();
        }
        for (size_t d = lcp; d < t.size(); ++d) {
            path.push_back(uint32_t(nodes_.size()));
            nodes_.push_back({0, uint32_t(ids_.size()), uint16_t(d + 1), uint8_t(t[d])});
        }
        ids_.push_back(id);  // the last node created is this token's: duplicates follow at once
        max_depth_ = std::max(max_depth_, t.size());
        prev = &t;
    }
    while (!path.empty()) {
        nodes_[path.back()].end = uint32_t(nodes_.size());
        path.pop_back();
    }
    nodes_.push_back({uint32_t(nodes_.size() + 1), uint32_t(ids_.size()), 0, 0});  // sentinel
    stats_.trie_nodes = nodes_.size() - 1;
}

void TokenMask::walk(const Matcher& m, uint32_t* bits) const {
    std::memset(bits, 0, mask_words() * sizeof(uint32_t));
    detail::Automaton& a = m.automaton();
    std::vector<uint32_t> st(max_depth_ + 1);
    st[0] = m.state();
    const size_t n = nodes_.size() - 1;
    const Node* nodes = nodes_.data();
    const int32_t* ids = ids_.data();
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
    if (a.accepting(m.state()))
        for (int32_t id : eog_ids_) bits[uint32_t(id) >> 5] |= 1u << (uint32_t(id) & 31);
}

void TokenMask::fill_mask(const Matcher& m, uint32_t* bits) const {
    if (m.is_ended()) {
        std::memset(bits, 0, mask_words() * sizeof(uint32_t));
        return;
    }
    const std::string& key = m.automaton().key(m.state());
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
    walk(m, bits);
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
