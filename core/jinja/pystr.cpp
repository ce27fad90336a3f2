// Python str behaviour over UTF-8: code point indexing, Unicode whitespace, case mapping for
// the scripts chat templates meet (ASCII, Latin-1, Greek, Cyrillic).
#include "core/rules/utf8_rule.h"
#include <algorithm>

#include "core/jinja/internal.h"

namespace ls::jinja {

namespace {

size_t cp_len_at(std::string_view s, size_t i) {
    unsigned char c = s[i];
    size_t n = c < 0x80 ? 1 : c < 0xC0 ? 1 : c < 0xE0 ? 2 : c < 0xF0 ? 3 : 4;
    return std::min(n, s.size() - i);
}

uint32_t decode(std::string_view c) {
    unsigned char b = c[0];
    if (c.size() == 1) return b;
    uint32_t cp = c.size() == 2 ? b & 0x1F : c.size() == 3 ? b & 0x0F : b & 0x07;
    for (size_t k = 1; k < c.size(); ++k) cp = (cp << 6) | (uint8_t(c[k]) & 0x3F);
    return cp;
}


uint32_t to_upper(uint32_t c) {
    if (c >= 'a' && c <= 'z') return c - 32;
    if ((c >= 0xE0 && c <= 0xFE && c != 0xF7)) return c - 32;
    if (c == 0xFF) return 0x178;
    if (((c >= 0x101 && c <= 0x137 && c != 0x131) || (c >= 0x14B && c <= 0x177)) && (c & 1)) return c - 1;
    if (((c >= 0x13A && c <= 0x148) || (c >= 0x17A && c <= 0x17E)) && !(c & 1)) return c - 1;
    if (c >= 0x3B1 && c <= 0x3C9 && c != 0x3C2) return c - 32;
    if (c >= 0x430 && c <= 0x44F) return c - 32;
    if (c >= 0x450 && c <= 0x45F) return c - 80;
    return c;
}

uint32_t to_lower(uint32_t c) {
    if (c >= 'A' && c <= 'Z') return c + 32;
    if ((c >= 0xC0 && c <= 0xDE && c != 0xD7)) return c + 32;
    if (c == 0x178) return 0xFF;
    if (((c >= 0x100 && c <= 0x136 && c != 0x130) || (c >= 0x14A && c <= 0x176)) && !(c & 1)) return c + 1;
    if (((c >= 0x139 && c <= 0x147) || (c >= 0x179 && c <= 0x17D)) && (c & 1)) return c + 1;
    if (c >= 0x391 && c <= 0x3A9 && c != 0x3A2) return c + 32;
    if (c >= 0x410 && c <= 0x42F) return c + 32;
    if (c >= 0x400 && c <= 0x40F) return c + 80;
    return c;
}

template <class F>
std::string map_cps(std::string_view s, F f) {
    std::string out;
    out.reserve(s.size());
    for (size_t i = 0; i < s.size();) {
        size_t n = cp_len_at(s, i);
        ls::utf8_append(out, f(decode(s.substr(i, n))));
        i += n;
    }
    return out;
}

}  // namespace

std::vector<std::string_view> code_points(std::string_view s) {
    std::vector<std::string_view> out;
    for (size_t i = 0; i < s.size();) {
        size_t n = cp_len_at(s, i);
        out.push_back(s.substr(i, n));
        i += n;
    }
    return out;
}

size_t cp_length(std::string_view s) {
    size_t n = 0;
    for (unsigned char c : s)
        if ((c & 0xC0) != 0x80) ++n;
    return n;
}

bool is_py_space(uint32_t c) {
    return (c >= 0x09 && c <= 0x0D) || (c >= 0x1C && c <= 0x20) || c == 0x85 || c == 0xA0 || c == 0x1680 ||
           (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F || c == 0x205F || c == 0x3000;
}

std::string py_strip(std::string_view s, bool left, bool right, const Value& chars) {
    auto cps = code_points(s);
    std::vector<std::string_view> set;
    bool ws = chars.is_none() || chars.is_undefined();
    if (!ws) {
        if (!chars.is_string()) fail("strip arg must be None or str");
        set = code_points(chars.str());
    }
    auto strip_it = [&](std::string_view c) {
        if (ws) return is_py_space(decode(c));
        return std::find(set.begin(), set.end(), c) != set.end();
    };
    size_t b = 0, e = cps.size();
    if (left)
        while (b < e && strip_it(cps[b])) ++b;
    if (right)
        while (e > b && strip_it(cps[e - 1])) --e;
    if (b == e) return "";
    const char* start = cps[b].data();
    const char* end = cps[e - 1].data() + cps[e - 1].size();
    return std::string(start, size_t(end - start));
}

std::string py_upper(std::string_view s) {
    std::string out = map_cps(s, to_upper);
    // The one common expansion: ß -> SS.
    for (size_t p = out.find("\xc3\x9f"); p != std::string::npos; p = out.find("\xc3\x9f", p)) out.replace(p, 2, "SS");
    return out;
}
std::string py_lower(std::string_view s) { return map_cps(s, to_lower); }

std::string html_escape(std::string_view s) {
    std::string out;
    for (char c : s) {
        switch (c) {
            case '&': out += "&amp;"; break;
            case '<': out += "&lt;"; break;
            case '>': out += "&gt;"; break;
            case '"': out += "&#34;"; break;
            case '\'': out += "&#39;"; break;
            default: out += c;
        }
    }
    return out;
}

int64_t checked_int(const Value& v, const char* what) {
    if (v.is_int() || v.is_bool()) return v.as_int();
    if (v.is_undefined()) fail(v.str());
    fail(std::string(what) + ": '" + v.type_name() + "' object cannot be interpreted as an integer");
}

std::vector<int64_t> slice_indices(int64_t len, const Value& start, const Value& stop, const Value& step) {
    int64_t st = step.is_none() ? 1 : checked_int(step, "slice");
    if (st == 0) fail("slice step cannot be zero");
    auto norm = [&](const Value& v, int64_t dflt, bool is_start) {
        (void)is_start;
        if (v.is_none()) return dflt;
        int64_t x = checked_int(v, "slice");
        if (x < 0) {
            x += len;
            if (x < 0) x = st < 0 ? -1 : 0;
        } else if (x >= len) {
            x = st < 0 ? len - 1 : len;
        }
        return x;
    };
    int64_t b = norm(start, st < 0 ? len - 1 : 0, true);
    int64_t e = norm(stop, st < 0 ? -1 : len, false);
    std::vector<int64_t> out;
    if (st > 0)
        for (int64_t i = b; i < e; i += st) out.push_back(i);
    else
        for (int64_t i = b; i > e; i += st) out.push_back(i);
    return out;
}

}  // namespace ls::jinja
