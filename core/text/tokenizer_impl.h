// Internal: the shared tables behind ls::Tokenizer (not part of the public API).
#pragma once
#include <array>
#include <functional>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "core/text/tokenizer.h"
#include "core/text/utf8.h"

namespace ls {

// piece text -> id: open addressing over the vocabulary's own strings (no per-entry
// allocation, so a 262k vocabulary indexes in a few ms). First occurrence wins.
class PieceMap {
public:
    void build(const std::vector<std::string>& tokens);
    int32_t find(std::string_view s) const {
        if (slots_.empty()) return -1;
        const uint64_t h = hash(s);
        const uint32_t tag = uint32_t(h >> 32);
        for (size_t i = size_t(h) & mask_;; i = (i + 1) & mask_) {
            const Slot& sl = slots_[i];
            if (sl.id < 0) return -1;
            if (sl.tag == tag && (*tokens_)[size_t(sl.id)] == s) return sl.id;
        }
    }
    static uint64_t hash(std::string_view s) {
        uint64_t h = 0xcbf29ce484222325ull;  // FNV-1a, then a final mix
        for (char c : s) h = (h ^ uint8_t(c)) * 0x100000001b3ull;
        h ^= h >> 29;
        h *= 0xbf58476d1ce4e5b9ull;
        return h ^ (h >> 32);
    }

private:
    struct Slot {
        uint32_t tag;
        int32_t id;  // -1: empty
    };
    std::vector<Slot> slots_;
    size_t mask_ = 0;
    const std::vector<std::string>* tokens_ = nullptr;
};

struct Tokenizer::Impl {
    Vocab v;
    PieceMap pieces;  // over v.tokens, which never changes after construction
    // Control and user-defined pieces, matched in the raw text before BPE.
    std::unordered_map<std::string_view, int32_t> special;
    std::array<std::vector<uint32_t>, 256> special_lens;  // by first byte, longest first
    std::array<int32_t, 256> byte_token{};                // <0xXX> ids (SPM), -1 if absent
    std::vector<int32_t> eog_ids;
    Tokenizer::Fim fim;
    int32_t eot_id = -1;

    // gpt2: (left id << 32 | right id) -> {rank, merged id}
    struct Merge { int32_t rank; int32_t result; };
    std::unordered_map<uint64_t, Merge> merges;
    // The regex split before byte-level BPE (tokenizer.ggml.pre; tokenizer_bpe.cpp has the patterns).
    enum class Pre { Gpt2, Smollm, Llama3, Qwen2, Qwen35, Gpt4o, Tekken, DeepseekV3, DeepseekLlm, KimiK2 } pre = Pre::Gpt2;
    bool ignore_merges = false;  // llama3, tekken: a whole pre-token found in the vocab is taken as is

    TokenType type(int32_t id) const {
        return v.types.empty() ? TokenType::Normal : static_cast<TokenType>(v.types[size_t(id)]);
    }
    void encode_spm(std::string_view frag, bool prefix_space, std::vector<int32_t>& out) const;
    void encode_bpe(std::string_view frag, std::vector<int32_t>& out) const;
    void encode_bpe_spm(std::string_view frag, std::vector<int32_t>& out) const;
    void encode_bpe_spm_chunk(std::string_view word, std::vector<int32_t>& out) const;
    void build_bpe();
    void encode_wpm(std::string_view frag, std::vector<int32_t>& out) const;
    size_t wpm_max_len = 0;  // WordPiece: the longest piece, in bytes
};

// The split and ignore_merges for a tokenizer.ggml.pre value ("" is GPT-2's); throws
// std::runtime_error naming the value and the supported ones for any other.
struct BpePre {
    Tokenizer::Impl::Pre pre;
    bool ignore_merges;
};
BpePre bpe_pre_for(std::string_view name);
// Calls `piece` with each pre-token of `frag` (the text between special tokens) in order.
void bpe_pre_split(Tokenizer::Impl::Pre pre, std::string_view frag, const std::function<void(std::string_view)>& piece);

// WordPiece's pre-tokenization (tokenizer_wpm.cpp): the words of `text`, each lower-cased with
// accents dropped; punctuation, ASCII symbols and CJK ideographs are words of their own.
std::vector<std::string> wpm_words(std::string_view text);

// "<0xAB>" -> 0xAB, else -1: the byte-fallback pieces, read when the vocabulary is indexed
// and again when a token is turned back into bytes.
inline int parse_byte_piece(std::string_view t) {
    const auto hexval = [](char c) {
        if (c >= '0' && c <= '9') return c - '0';
        if (c >= 'A' && c <= 'F') return c - 'A' + 10;
        if (c >= 'a' && c <= 'f') return c - 'a' + 10;
        return -1;
    };
    if (t.size() != 6 || t.substr(0, 3) != "<0x" || t[5] != '>') return -1;
    int h = hexval(t[3]), l = hexval(t[4]);
    return (h < 0 || l < 0) ? -1 : h * 16 + l;
}

}  // namespace ls
