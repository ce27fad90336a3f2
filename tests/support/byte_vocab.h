// A byte-level BPE vocabulary for tests of text paths without a model: every byte's
// bytes_to_unicode character (ids 0..255), then the given special tokens with their types.
#pragma once
#include <string>
#include <utility>
#include <vector>

#include "core/text/tokenizer.h"

namespace ls::test {

inline Vocab byte_vocab(const std::vector<std::pair<std::string, int32_t>>& specials) {
    Vocab v;
    v.kind = TokenizerKind::BytePairGpt2;
    int n = 0;
    for (int b = 0; b < 256; ++b) {
        const bool direct = (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
        std::string s;
        utf8_append(s, direct ? uint32_t(b) : uint32_t(256 + n++));
        v.tokens.push_back(s);
        v.types.push_back(1);
    }
    for (const auto& [text, type] : specials) v.tokens.push_back(text), v.types.push_back(type);
    return v;
}

}  // namespace ls::test
