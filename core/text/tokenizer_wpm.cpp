// WordPiece ("bert" tokenizer.ggml.model), with llama.cpp's results: the text is cut into
// words at whitespace; each code point is reduced to the base of its canonical decomposition
// (accents dropped) and lower-cased; control characters are dropped; punctuation, ASCII
// symbols and CJK ideographs are words of their own. Each word, prefixed with "▁" (the GGUF
// converter writes word-initial pieces as "▁piece" and BERT's "##piece" continuations as
// "piece"), is cut greedily into the longest vocabulary pieces from the left; a word with a
// part no piece matches becomes one unknown token. [CLS] ... [SEP] come from encode().
#include <algorithm>
#include <string>

#include "core/text/tokenizer_impl.h"

namespace ls {

namespace {

struct CpRange {
    uint32_t lo, hi;
};
struct CpRun {
    uint32_t lo, hi, base;
};
struct CpPair {
    uint32_t cp, to;
};
#include "core/text/wpm_tables.inc"

template <size_t N> bool in_ranges(const CpRange (&r)[N], uint32_t cp) {
    const CpRange* it = std::upper_bound(r, r + N, cp, [](uint32_t c, const CpRange& x) { return c < x.lo; });
    return it != r && cp <= (it - 1)->hi;
}
uint32_t nfd_base(uint32_t cp) {
    const CpRun* it = std::upper_bound(kWpmNfd, std::end(kWpmNfd), cp, [](uint32_t c, const CpRun& x) { return c < x.lo; });
    return it != kWpmNfd && cp <= (it - 1)->hi ? (it - 1)->base : cp;
}
uint32_t to_lower(uint32_t cp) {
    const CpPair* it = std::lower_bound(kWpmLower, std::end(kWpmLower), cp, [](const CpPair& x, uint32_t c) { return x.cp < c; });
    return it != std::end(kWpmLower) && it->cp == cp ? it->to : cp;
}
// The White_Space code points (llama.cpp's list).
bool is_space(uint32_t c) {
    return (c >= 0x9 && c <= 0xD) || c == 0x20 || c == 0x85 || c == 0xA0 || c == 0x1680 || (c >= 0x2000 && c <= 0x200A) ||
           c == 0x2028 || c == 0x2029 || c == 0x202F || c == 0x205F || c == 0x3000;
}
// BERT's CJK ranges (the 0x2B920 start follows HF's Rust tokenizer, as llama.cpp does).
bool is_cjk(uint32_t c) {
    return (c >= 0x4E00 && c <= 0x9FFF) || (c >= 0x3400 && c <= 0x4DBF) || (c >= 0x20000 && c <= 0x2A6DF) ||
           (c >= 0x2A700 && c <= 0x2B73F) || (c >= 0x2B740 && c <= 0x2B81F) || (c >= 0x2B920 && c <= 0x2CEAF) ||
           (c >= 0xF900 && c <= 0xFAFF) || (c >= 0x2F800 && c <= 0x2FA1F);
}
uint32_t decode_cp(std::string_view s, size_t i, size_t len) {
    const auto b = [&](size_t k) { return uint32_t(uint8_t(s[i + k])); };
    switch (len) {
        case 1: return b(0);
        case 2: return (b(0) & 0x1F) << 6 | (b(1) & 0x3F);
        case 3: return (b(0) & 0x0F) << 12 | (b(1) & 0x3F) << 6 | (b(2) & 0x3F);
        default: return (b(0) & 0x07) << 18 | (b(1) & 0x3F) << 12 | (b(2) & 0x3F) << 6 | (b(3) & 0x3F);
    }
}

}  // namespace

std::vector<std::string> wpm_words(std::string_view text) {
    std::vector<std::string> words(1);
    for (size_t i = 0; i < text.size();) {
        const size_t len = utf8_valid_len(text, i);
        if (len == 0) {  // an invalid byte: U+FFFD, which is dropped
            ++i;
            continue;
        }
        const uint32_t cp = nfd_base(decode_cp(text, i, len));
        i += len;
        if (is_space(cp)) {
            if (!words.back().empty()) words.emplace_back();
            continue;
        }
        if (cp == 0 || cp == 0xFFFD || in_ranges(kWpmControl, cp)) continue;
        std::string s;
        utf8_append(s, to_lower(cp));
        if (in_ranges(kWpmPunct, cp) || in_ranges(kWpmSymbol, cp) || is_cjk(cp)) {
            if (!words.back().empty()) words.emplace_back();
            words.back() = s;
            words.emplace_back();
        } else {
            words.back() += s;
        }
    }
    if (words.back().empty()) words.pop_back();
    return words;
}

void Tokenizer::Impl::encode_wpm(std::string_view frag, std::vector<int32_t>& out) const {
    for (const std::string& word : wpm_words(frag)) {
        const std::string w = "\xE2\x96\x81" + word;
        const size_t n = w.size(), start = out.size();
        for (size_t i = 0; i < n;) {
            size_t j = std::min(n, i + wpm_max_len);
            int32_t id = -1;
            for (; j > i; --j)
                if ((id = pieces.find(std::string_view(w).substr(i, j - i))) >= 0) break;
            if (id < 0) {  // this part matches no piece: the whole word is unknown
                out.resize(start);
                break;
            }
            out.push_back(id);
            i = j;
        }
        if (out.size() == start && v.unk_id >= 0) out.push_back(v.unk_id);
    }
}

}  // namespace ls
