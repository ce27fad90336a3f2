// SentencePiece-style BPE: spaces become U+2581, the text starts as one symbol per UTF-8
// character, and the adjacent pair whose concatenation is the highest-scoring vocab piece
// is merged until none is left (ties: leftmost). Symbols not in the vocab fall back to
// <0xXX> byte pieces, else <unk>.
#include <queue>
#include <string>
#include <unordered_map>

#include "core/text/tokenizer_impl.h"

namespace ls {

namespace {

struct Sym {
    uint32_t start;
    uint32_t len;  // 0 once merged into its left neighbour
    int32_t prev, next;
};

struct Pair {
    float score;
    int32_t left, right;
    uint32_t len;  // sym[left].len + sym[right].len when queued
};

struct PairLess {
    bool operator()(const Pair& a, const Pair& b) const {
        return a.score < b.score || (a.score == b.score && a.left > b.left);
    }
};

bool mergeable(TokenType t) {
    return t == TokenType::Normal || t == TokenType::UserDefined || t == TokenType::Unused;
}

}  // namespace

void Tokenizer::Impl::encode_spm(std::string_view frag, bool prefix_space, std::vector<int32_t>& out) const {
    static constexpr std::string_view kMark = "\xE2\x96\x81";
    std::string s;
    s.reserve(frag.size() + frag.size() / 2 + 3);
    if (prefix_space) s += kMark;
    for (char c : frag) {
        if (c == ' ')
            s += kMark;
        else
            s += c;
    }

    std::vector<Sym> sym;
    sym.reserve(s.size());
    for (size_t i = 0; i < s.size();) {
        size_t len = utf8_valid_len(s, i);
        if (len == 0) len = 1;  // a stray byte is a symbol of its own
        int32_t idx = int32_t(sym.size());
        sym.push_back({uint32_t(i), uint32_t(len), idx - 1, -1});
        if (idx > 0) sym[size_t(idx - 1)].next = idx;
        i += len;
    }

    std::priority_queue<Pair, std::vector<Pair>, PairLess> queue;
    auto lookup = [&](uint32_t start, uint32_t len) -> int32_t {
        return pieces.find(std::string_view(s.data() + start, len));
    };
    auto try_pair = [&](int32_t l, int32_t r) {
        if (l < 0 || r < 0) return;
        uint32_t len = sym[size_t(l)].len + sym[size_t(r)].len;
        int32_t id = lookup(sym[size_t(l)].start, len);
        if (id < 0 || !mergeable(type(id))) return;
        queue.push({v.scores[size_t(id)], l, r, len});
    };
    for (size_t i = 1; i < sym.size(); ++i) try_pair(int32_t(i - 1), int32_t(i));

    // Pieces of type Unused are split back into what they were merged from (as
    // SentencePiece does); remember their parts.
    std::unordered_map<std::string_view, std::pair<std::string_view, std::string_view>> unused_parts;

    while (!queue.empty()) {
        Pair p = queue.top();
        queue.pop();
        Sym& L = sym[size_t(p.left)];
        Sym& R = sym[size_t(p.right)];
        if (L.len == 0 || R.len == 0 || L.next != p.right || L.len + R.len != p.len) continue;  // stale
        int32_t id = lookup(L.start, p.len);
        if (type(id) == TokenType::Unused)
            unused_parts.emplace(std::string_view(s.data() + L.start, p.len),
                                 std::make_pair(std::string_view(s.data() + L.start, L.len),
                                                std::string_view(s.data() + R.start, R.len)));
        L.len = p.len;
        R.len = 0;
        L.next = R.next;
        if (R.next >= 0) sym[size_t(R.next)].prev = p.left;
        try_pair(L.prev, p.left);
        try_pair(p.left, L.next);
    }

    auto emit = [&](auto&& self, std::string_view piece) -> void {
        const int32_t id = pieces.find(piece);
        if (id >= 0 && mergeable(type(id))) {
            if (type(id) == TokenType::Unused) {
                auto parts = unused_parts.find(piece);
                if (parts != unused_parts.end()) {
                    self(self, parts->second.first);
                    self(self, parts->second.second);
                    return;
                }
            }
            out.push_back(id);
            return;
        }
        bool all_bytes = true;
        for (char c : piece) all_bytes = all_bytes && byte_token[uint8_t(c)] >= 0;
        if (all_bytes) {
            for (char c : piece) out.push_back(byte_token[uint8_t(c)]);
        } else if (v.unk_id >= 0) {
            out.push_back(v.unk_id);
        }
    };
    for (int32_t i = sym.empty() ? -1 : 0; i >= 0; i = sym[size_t(i)].next)
        emit(emit, std::string_view(s.data() + sym[size_t(i)].start, sym[size_t(i)].len));
}

}  // namespace ls
