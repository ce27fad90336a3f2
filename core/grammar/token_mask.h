// Which tokens of a vocabulary a grammar allows next.
//
// Built once per vocabulary from the tokens' byte strings (decoded: real spaces, not "▁"):
// the text tokens go into a trie stored in preorder, each node knowing where its subtree ends,
// so one pass over the array walks every token while a rejected prefix skips its whole subtree.
// Each step of the walk is a memoized transition of the matcher's automaton (one table lookup
// once warm). The masks computed are cached by the matcher state's content (bounded LRU): JSON
// grammars return to the same few states all the time (inside a string, between values).
//
// Special/control tokens are never part of grammar text; end-of-generation tokens are allowed
// exactly where the grammar's root may end; empty tokens never.
//
// Thread-safe: the cache is locked; the walk itself runs on the caller's Matcher.
#pragma once
#include <cstdint>
#include <list>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/grammar/matcher.h"

namespace ls::grammar {

class TokenMask {
public:
    // tokens[id]: the bytes token id stands for; is_eog / is_special: per id (shorter vectors
    // mean false for the rest). cache_entries: masks kept (each n_vocab / 8 bytes).
    TokenMask(std::vector<std::string> tokens, const std::vector<bool>& is_eog, const std::vector<bool>& is_special,
              size_t cache_entries = 64);

    int32_t n_vocab() const { return int32_t(tokens_.size()); }
    size_t mask_words() const { return (tokens_.size() + 31) / 32; }  // uint32 words in a mask

    // bits[id / 32] bit (id % 32) set where the matcher allows token id; mask_words() words
    // are written.
    void fill_mask(const Matcher& m, uint32_t* bits) const;
    // Whether the matcher allows token id: walks only that token's bytes.
    bool allows(const Matcher& m, int32_t id) const;
    // Reads a mask written by fill_mask.
    static bool test(const uint32_t* bits, int32_t id) { return (bits[uint32_t(id) >> 5] >> (uint32_t(id) & 31)) & 1; }

    const std::string& token_bytes(int32_t id) const { return tokens_[size_t(id)]; }
    bool is_eog(int32_t id) const { return flags_[size_t(id)] & kEog; }
    bool is_special(int32_t id) const { return flags_[size_t(id)] & kSpecial; }

    struct Stats {
        uint64_t hits = 0, misses = 0;
        size_t trie_nodes = 0;
    };
    Stats stats() const;

private:
    static constexpr uint8_t kEog = 1, kSpecial = 2;
    struct Node {
        uint32_t end;        // the first node after this one's subtree
        uint32_t tok_begin;  // its tokens: ids[tok_begin, next node's tok_begin)
        uint16_t depth;      // 1 for a token's first byte
        uint8_t byte;
    };
    struct Trie {
        std::vector<Node> nodes;  // preorder, plus a sentinel
        std::vector<int32_t> ids;
        size_t max_depth = 0;
    };
    Trie build_trie(std::vector<int32_t> ids) const;
    // ORs into bits the tokens of `t` that the matcher allows.
    void walk(const Trie& t, const Matcher& m, uint32_t* bits) const;
    void compute(const Matcher& m, uint32_t* bits) const;

    std::vector<std::string> tokens_;
    std::vector<uint8_t> flags_;
    std::vector<int32_t> eog_ids_;
    Trie all_;    // every text token
    // The inside of a JSON string allows every token of "plain" characters (complete UTF-8,
    // no '"', '\' or control character); from such a state (Automaton::plain_loop) those are
    // set at once and only the other tokens are walked.
    Trie other_;
    std::vector<uint32_t> plain_bits_;

    // LRU over state keys (detail::Automaton::key).
    size_t capacity_;
    mutable std::mutex mu_;
    mutable std::list<std::pair<std::string, std::vector<uint32_t>>> lru_;
    mutable std::unordered_map<std::string, std::list<std::pair<std::string, std::vector<uint32_t>>>::iterator> index_;
    mutable Stats stats_;
};

}  // namespace ls::grammar
