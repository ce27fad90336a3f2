// UTF-8 as the tokenizers and the token stream need it: validation by the Unicode
// well-formedness table, encoding, and a stream that holds back unfinished sequences.
#pragma once
#include "core/rules/utf8_rule.h"
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace ls {

// Length of the well-formed sequence starting at s[i] (1..4), or 0 if s[i] does not
// start one (invalid lead, bad continuation, overlong, surrogate, truncated).
size_t utf8_valid_len(std::string_view s, size_t i);
// Appends the UTF-8 encoding of cp.
// utf8_append: core/rules/utf8_rule.h

// Streaming detokenizer: push token pieces, get back only complete, valid UTF-8.
// A partial multi-byte sequence is held until the next push; bytes that can never form
// valid UTF-8 come out as U+FFFD; flush() turns a pending partial sequence into U+FFFD.
class Utf8Stream {
public:
    std::string push(const std::string& piece);
    std::string flush();

private:
    std::string pending_;
};

}  // namespace ls
