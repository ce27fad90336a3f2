#include "core/text/utf8.h"

#include <algorithm>

namespace ls {

size_t utf8_valid_len(std::string_view s, size_t i) {
    const size_t n = s.size();
    const auto b = [&](size_t k) { return static_cast<uint8_t>(s[k]); };
    const uint8_t c = b(i);
    if (c < 0x80) return 1;
    size_t len;
    uint8_t lo = 0x80, hi = 0xBF;  // allowed range of the second byte
    if (c >= 0xC2 && c <= 0xDF) {
        len = 2;
    } else if (c >= 0xE0 && c <= 0xEF) {
        len = 3;
        if (c == 0xE0) lo = 0xA0;
        if (c == 0xED) hi = 0x9F;
    } else if (c >= 0xF0 && c <= 0xF4) {
        len = 4;
        if (c == 0xF0) lo = 0x90;
        if (c == 0xF4) hi = 0x8F;
    } else {
        return 0;
    }
    if (i + len > n) return 0;
    if (b(i + 1) < lo || b(i + 1) > hi) return 0;
    for (size_t k = 2; k < len; ++k)
        if ((b(i + k) & 0xC0) != 0x80) return 0;
    return len;
}


namespace {
// How many bytes from s[i] form a proper prefix of a well-formed sequence (the "maximal
// subpart" that one U+FFFD replaces): 0 if s[i] cannot start one. `need` gets the full
// length the lead byte announces.
size_t valid_prefix(std::string_view s, size_t i, size_t& need) {
    const uint8_t c = uint8_t(s[i]);
    need = (c >= 0xC2 && c <= 0xDF) ? 2 : (c >= 0xE0 && c <= 0xEF) ? 3 : (c >= 0xF0 && c <= 0xF4) ? 4 : 0;
    if (need == 0) return 0;
    size_t k = 1;
    for (; k < need && i + k < s.size(); ++k) {
        uint8_t b = uint8_t(s[i + k]), lo = 0x80, hi = 0xBF;
        if (k == 1) {
            if (c == 0xE0) lo = 0xA0;
            if (c == 0xED) hi = 0x9F;
            if (c == 0xF0) lo = 0x90;
            if (c == 0xF4) hi = 0x8F;
        }
        if (b < lo || b > hi) break;
    }
    return k;
}
}  // namespace

std::string Utf8Stream::push(const std::string& piece) {
    pending_ += piece;
    std::string out;
    size_t i = 0;
    const size_t n = pending_.size();
    while (i < n) {
        size_t len = utf8_valid_len(pending_, i);
        if (len > 0) {
            out.append(pending_, i, len);
            i += len;
            continue;
        }
        size_t need = 0;
        size_t m = valid_prefix(pending_, i, need);
        if (m > 0 && i + m == n) break;  // unfinished: the next piece may complete it
        out += "\xEF\xBF\xBD";          // U+FFFD for the maximal invalid subpart
        i += std::max<size_t>(m, 1);
    }
    pending_.erase(0, i);
    return out;
}

std::string Utf8Stream::flush() {
    std::string out;
    if (!pending_.empty()) out = "\xEF\xBF\xBD";  // an unfinished sequence
    pending_.clear();
    return out;
}

}  // namespace ls
