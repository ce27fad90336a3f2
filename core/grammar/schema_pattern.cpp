// JSON Schema `pattern` -> GBNF. The pattern constrains the string's decoded value, while the
// grammar writes the JSON text, so each character comes out in its JSON spelling: '"' as \",
// '\' as \\, a control character as its escape. Classes and '.' produce only characters that
// need no escape (plus the escaped forms of '"', '\' and \t \n \r where a positive class names
// them): a subset of what the pattern allows, never more.
#include "core/rules/utf8_rule.h"
#include <algorithm>
#include <cstdio>
#include <vector>

#include "core/grammar/json_schema.h"

namespace ls::grammar {
namespace {

using Ranges = std::vector<std::pair<uint32_t, uint32_t>>;


// One code point inside a GBNF class.
void class_char(std::string& out, uint32_t cp) {
    if (cp == '\\' || cp == '"' || cp == ']' || cp == '-' || cp == '^' || cp == '[') {
        out += '\\';
        out += char(cp);
    } else if (cp < 0x20 || cp == 0x7F) {
        char buf[8];
        std::snprintf(buf, sizeof buf, "\\x%02X", cp);
        out += buf;
    } else {
        ls::utf8_append(out, cp);
    }
}

// The JSON spelling of code point cp as a GBNF literal.
std::string json_char_literal(uint32_t cp) {
    switch (cp) {
        case '"': return "\"\\\\\\\"\"";   // "\\\""
        case '\\': return "\"\\\\\\\\\"";  // "\\\\"
        case '\n': return "\"\\\\n\"";
        case '\t': return "\"\\\\t\"";
        case '\r': return "\"\\\\r\"";
        case '\b': return "\"\\\\b\"";
        case '\f': return "\"\\\\f\"";
        default: break;
    }
    if (cp < 0x20) {
        char buf[16];
        std::snprintf(buf, sizeof buf, "\"\\\\u%04X\"", cp);
        return buf;
    }
    std::string out = "\"";
    ls::utf8_append(out, cp);
    return out + "\"";
}

class RegexToGbnf {
public:
    RegexToGbnf(const std::string& pattern, const std::string& char_rule) : src_(pattern), char_rule_(char_rule) {
        for (size_t i = 0; i < pattern.size();) {
            unsigned char c = (unsigned char)pattern[i];
            size_t len = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
            if (len == 0 || i + len > pattern.size()) fail("invalid UTF-8");
            uint32_t cp = len == 1 ? c : len == 2 ? (c & 0x1F) : len == 3 ? (c & 0x0F) : (c & 0x07);
            for (size_t k = 1; k < len; ++k) cp = (cp << 6) | ((unsigned char)pattern[i + k] & 0x3F);
            s_.push_back(cp);
            i += len;
        }
    }

    std::string run() {
        std::vector<std::string> alts;
        for (;;) {
            bool start = false, end = false;
            if (peek() == '^') { start = true; ++i_; }
            std::string seq = sequence(true, end);
            std::string a;
            if (!start) a += char_rule_ + "* ";
            a += seq.empty() ? "\"\"" : seq;
            if (!end) a += " " + char_rule_ + "*";
            alts.push_back(a);
            if (i_ >= s_.size()) break;
            if (s_[i_] == ')') fail("unbalanced ')'");
            ++i_;  // '|'
        }
        if (alts.size() == 1) return alts[0];
        std::string out = "(";
        for (size_t k = 0; k < alts.size(); ++k) out += (k ? " | " : "") + alts[k];
        return out + ")";
    }

private:
    [[noreturn]] void fail(const std::string& what) const {
        throw Error("pattern \"" + src_ + "\": " + what + (i_ < s_.size() ? " at character " + std::to_string(i_ + 1) : ""));
    }
    uint32_t peek() const { return i_ < s_.size() ? s_[i_] : 0; }
    bool at_end() const { return i_ >= s_.size(); }

    std::string sequence(bool top, bool& end_anchor) {
        std::vector<std::string> items;
        while (!at_end()) {
            uint32_t c = s_[i_];
            if (c == '|' || c == ')') break;
            if (c == '^') fail("'^' inside the pattern (only at the start of an alternative) is not supported");
            if (c == '$') {
                ++i_;
                if (top && (at_end() || peek() == '|')) { end_anchor = true; break; }
                fail("'$' inside the pattern (only at the end of an alternative) is not supported");
            }
            std::string a = atom();
            items.push_back(quantified(a));
        }
        std::string out;
        for (size_t k = 0; k < items.size(); ++k) out += (k ? " " : "") + items[k];
        return out;
    }

    std::string alternation() {
        std::vector<std::string> alts;
        for (;;) {
            bool dummy = false;
            std::string seq = sequence(false, dummy);
            alts.push_back(seq.empty() ? "\"\"" : seq);
            if (peek() != '|') break;
            ++i_;
        }
        std::string out;
        for (size_t k = 0; k < alts.size(); ++k) out += (k ? " | " : "") + alts[k];
        return out;
    }

    std::string quantified(const std::string& a) {
        if (at_end()) return a;
        uint32_t c = peek();
        std::string op;
        if (c == '*' || c == '+' || c == '?') {
            op = std::string(1, char(c));
            ++i_;
        } else if (c == '{') {
            size_t save = i_++;
            std::string m, n;
            bool comma = false;
            while (!at_end() && peek() >= '0' && peek() <= '9') m += char(s_[i_++]);
            if (peek() == ',') {
                comma = true;
                ++i_;
                while (!at_end() && peek() >= '0' && peek() <= '9') n += char(s_[i_++]);
            }
            if (m.empty() || peek() != '}') {
                i_ = save;
                fail("'{' that is not a repetition {m}, {m,} or {m,n}");
            }
            ++i_;
            if (m.size() > 5 || n.size() > 5 || std::stoul(m) > 10000 || (!n.empty() && std::stoul(n) > 10000)) {
                i_ = save;
                fail("a repetition count above 10000");
            }
            if (!n.empty() && std::stoul(n) < std::stoul(m)) {
                i_ = save;
                fail("a repetition {m,n} with n < m");
            }
            op = "{" + m + (comma ? "," + n : "") + "}";
        } else {
            return a;
        }
        if (peek() == '?') ++i_;  // lazy: the same language
        else if (peek() == '+') fail("possessive quantifiers are not supported");
        if (peek() == '*' || peek() == '+' || peek() == '{') fail("a quantifier after a quantifier");
        return "(" + a + ")" + op;
    }

    static void add_shorthand(Ranges& r, uint32_t e) {
        if (e == 'd') r.push_back({'0', '9'});
        if (e == 'w') { r.push_back({'a', 'z'}); r.push_back({'A', 'Z'}); r.push_back({'0', '9'}); r.push_back({'_', '_'}); }
        if (e == 's') { r.push_back({' ', ' '}); r.push_back({'\t', '\r'}); }
    }

    uint32_t hex_escape(size_t n) {
        uint32_t v = 0;
        for (size_t k = 0; k < n; ++k) {
            uint32_t c = peek();
            int d = (c >= '0' && c <= '9') ? int(c - '0') : (c >= 'a' && c <= 'f') ? int(c - 'a' + 10) : (c >= 'A' && c <= 'F') ? int(c - 'A' + 10) : -1;
            if (d < 0) fail("bad hex escape");
            v = v * 16 + uint32_t(d);
            ++i_;
        }
        return v;
    }

    // An escape's single code point (after the backslash), or fails for what has none.
    uint32_t escaped_char(uint32_t e) {
        switch (e) {
            case 'n': return '\n';
            case 't': return '\t';
            case 'r': return '\r';
            case 'f': return '\f';
            case 'v': return '\v';
            case '0': return 0;
            case 'x': return hex_escape(2);
            case 'u': return hex_escape(4);
            default: break;
        }
        if ((e >= '1' && e <= '9')) fail("backreferences are not supported");
        if (e == 'b' || e == 'B') fail("word boundaries (\\b, \\B) are not supported");
        if (e == 'p' || e == 'P') fail("Unicode property classes (\\p{..}) are not supported");
        if ((e >= 'a' && e <= 'z') || (e >= 'A' && e <= 'Z')) fail(std::string("unknown escape \\") + char(e));
        return e;
    }

    // A positive set of code points as GBNF: the class of those JSON writes unescaped, plus the
    // escaped spellings of '"', '\' and the control characters in the set.
    std::string positive_set(Ranges r) {
        std::sort(r.begin(), r.end());
        std::string cls;
        std::vector<std::string> extra;
        for (auto [lo, hi] : r) {
            for (uint32_t c : {uint32_t('"'), uint32_t('\\')})
                if (lo <= c && c <= hi) extra.push_back(json_char_literal(c));
            for (uint32_t c = lo; c <= std::min(hi, 0x1Fu); ++c) extra.push_back(json_char_literal(c));
            // Cut out the escaped ones and emit the rest.
            std::vector<std::pair<uint32_t, uint32_t>> parts;
            uint32_t a = std::max(lo, 0x20u);
            for (uint32_t cut : {uint32_t('"'), uint32_t('\\')}) {
                if (a <= cut && cut <= hi) {
                    if (a < cut) parts.push_back({a, cut - 1});
                    a = cut + 1;
                }
            }
            if (a <= hi && hi >= 0x20) parts.push_back({a, hi});
            for (auto [x, y] : parts) {
                class_char(cls, x);
                if (y != x) { cls += '-'; class_char(cls, y); }
            }
        }
        std::sort(extra.begin(), extra.end());
        extra.erase(std::unique(extra.begin(), extra.end()), extra.end());
        std::vector<std::string> alts;
        if (!cls.empty()) alts.push_back("[" + cls + "]");
        alts.insert(alts.end(), extra.begin(), extra.end());
        if (alts.empty()) fail("an empty character class");
        if (alts.size() == 1) return alts[0];
        std::string out = "(";
        for (size_t k = 0; k < alts.size(); ++k) out += (k ? " | " : "") + alts[k];
        return out + ")";
    }

    // A negated set: only unescaped characters outside it.
    static std::string negated_set(const Ranges& r) {
        std::string cls = "[^\"\\\\\\x00-\\x1F";
        for (auto [lo, hi] : r) {
            class_char(cls, lo);
            if (hi != lo) { cls += '-'; class_char(cls, hi); }
        }
        return cls + "]";
    }

    std::string char_class() {
        ++i_;  // [
        bool neg = false;
        if (peek() == '^') { neg = true; ++i_; }
        Ranges r;
        bool first = true;
        while (!at_end() && (peek() != ']' || first)) {
            first = false;
            uint32_t c = s_[i_++];
            uint32_t lo;
            if (c == '\\') {
                if (at_end()) fail("unterminated class");
                uint32_t e = s_[i_++];
                if (e == 'd' || e == 'w' || e == 's') { add_shorthand(r, e); continue; }
                if (e == 'D' || e == 'W' || e == 'S') fail("\\D, \\W, \\S inside a class are not supported");
                if (e == 'b') lo = '\b';
                else lo = escaped_char(e);
            } else {
                lo = c;
            }
            uint32_t hi = lo;
            if (peek() == '-' && i_ + 1 < s_.size() && s_[i_ + 1] != ']') {
                ++i_;
                uint32_t h = s_[i_++];
                if (h == '\\') {
                    if (at_end()) fail("unterminated class");
                    h = escaped_char(s_[i_++]);
                }
                hi = h;
                if (hi < lo) fail("class range out of order");
            }
            r.push_back({lo, hi});
        }
        if (at_end()) fail("unterminated class");
        ++i_;  // ]
        return neg ? negated_set(r) : positive_set(r);
    }

    std::string atom() {
        uint32_t c = s_[i_];
        if (c == '(') {
            ++i_;
            if (peek() == '?') {
                ++i_;
                uint32_t k = peek();
                if (k == ':') {
                    ++i_;
                } else if (k == '<' && i_ + 1 < s_.size() && s_[i_ + 1] != '=' && s_[i_ + 1] != '!') {
                    while (!at_end() && peek() != '>') ++i_;  // a named group: the name does not matter
                    ++i_;
                } else if (k == 'P' && i_ + 1 < s_.size() && s_[i_ + 1] == '<') {
                    while (!at_end() && peek() != '>') ++i_;
                    ++i_;
                } else {
                    fail("lookaround and inline flags ((?=, (?!, (?<=, (?i) ...) are not supported");
                }
            }
            std::string inner = alternation();
            if (peek() != ')') fail("unbalanced '('");
            ++i_;
            return "(" + (inner.empty() ? std::string("\"\"") : inner) + ")";
        }
        if (c == '[') return char_class();
        if (c == '.') {
            ++i_;
            return "[^\"\\\\\\x00-\\x1F]";
        }
        if (c == '*' || c == '+' || c == '?' || c == '{') fail("nothing to repeat");
        if (c == '\\') {
            ++i_;
            if (at_end()) fail("a trailing backslash");
            uint32_t e = s_[i_++];
            if (e == 'd' || e == 'w' || e == 's') {
                Ranges r;
                add_shorthand(r, e);
                return positive_set(r);
            }
            if (e == 'D') return negated_set({{'0', '9'}});
            if (e == 'W') return negated_set({{'a', 'z'}, {'A', 'Z'}, {'0', '9'}, {'_', '_'}});
            if (e == 'S') return negated_set({{' ', ' '}});
            return json_char_literal(escaped_char(e));
        }
        ++i_;
        return json_char_literal(c);
    }

    std::string src_;
    std::string char_rule_;
    std::vector<uint32_t> s_;
    size_t i_ = 0;
};

}  // namespace

std::string regex_to_gbnf(const std::string& pattern, const std::string& char_rule) {
    return RegexToGbnf(pattern, char_rule).run();
}

}  // namespace ls::grammar
