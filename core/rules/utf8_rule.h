// UTF-8 encoding of one code point, written once for every layer that writes text (the
// tokenizers, the Jinja interpreter, the grammar compiler). Header-only: those layers depend
// on nothing else of each other.
#pragma once
#include <cstdint>
#include <string>

namespace ls {

// Appends code point `cp` (at most 0x10FFFF; the caller has checked) as UTF-8.
inline void utf8_append(std::string& out, uint32_t cp) {
    if (cp < 0x80) {
        out += char(cp);
    } else if (cp < 0x800) {
        out += char(0xC0 | (cp >> 6));
        out += char(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
        out += char(0xE0 | (cp >> 12));
        out += char(0x80 | ((cp >> 6) & 0x3F));
        out += char(0x80 | (cp & 0x3F));
    } else {
        out += char(0xF0 | (cp >> 18));
        out += char(0x80 | ((cp >> 12) & 0x3F));
        out += char(0x80 | ((cp >> 6) & 0x3F));
        out += char(0x80 | (cp & 0x3F));
    }
}

}  // namespace ls
