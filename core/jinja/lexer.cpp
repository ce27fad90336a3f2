#include "core/rules/utf8_rule.h"
#include "core/jinja/lexer.h"

#include <cstring>

#include "core/jinja/internal.h"
#include "core/jinja/template.h"

namespace ls::jinja {

namespace {

uint32_t decode_at(std::string_view s, size_t i, size_t* len) {
    unsigned char c = s[i];
    int n = c < 0x80 ? 1 : c < 0xE0 ? 2 : c < 0xF0 ? 3 : 4;
    if (i + size_t(n) > s.size()) n = 1;
    uint32_t cp = n == 1 ? c : n == 2 ? c & 0x1F : n == 3 ? c & 0x0F : c & 0x07;
    for (int k = 1; k < n; ++k) cp = (cp << 6) | (uint8_t(s[i + size_t(k)]) & 0x3F);
    *len = size_t(n);
    return cp;
}

// Python's str.rstrip(): strips Unicode whitespace too.
std::string_view rstrip_ws(std::string_view s) {
    size_t end = s.size();
    while (end > 0) {
        size_t start = end - 1;
        while (start > 0 && (uint8_t(s[start]) & 0xC0) == 0x80) --start;
        size_t len;
        if (!is_py_space(decode_at(s, start, &len))) break;
        end = start;
    }
    return s.substr(0, end);
}

// Length of the whitespace run at s[i...] (regex \s*).
size_t ws_run(std::string_view s, size_t i) {
    size_t j = i;
    while (j < s.size()) {
        size_t len;
        if (!is_py_space(decode_at(s, j, &len))) break;
        j += len;
    }
    return j - i;
}


int hexval(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

[[noreturn]] void syntax(int line, const std::string& msg) { throw Error(line, "syntax", msg); }

// Python's unicode_escape over the literal's body, as jinja2 decodes string literals.
std::string unescape(std::string_view s, int line) {
    std::string out;
    for (size_t i = 0; i < s.size(); ++i) {
        char c = s[i];
        if (c != '\\' || i + 1 >= s.size()) {
            out += c;
            continue;
        }
        char e = s[++i];
        switch (e) {
            case '\n': break;
            case '\\': out += '\\'; break;
            case '\'': out += '\''; break;
            case '"': out += '"'; break;
            case 'a': out += '\a'; break;
            case 'b': out += '\b'; break;
            case 'f': out += '\f'; break;
            case 'n': out += '\n'; break;
            case 'r': out += '\r'; break;
            case 't': out += '\t'; break;
            case 'v': out += '\v'; break;
            case 'x':
            case 'u':
            case 'U': {
                int n = e == 'x' ? 2 : e == 'u' ? 4 : 8;
                uint32_t cp = 0;
                for (int k = 0; k < n; ++k) {
                    if (i + 1 >= s.size() || hexval(s[i + 1]) < 0)
                        syntax(line, std::string("truncated \\") + e + " escape in a string literal");
                    cp = cp * 16 + uint32_t(hexval(s[++i]));
                }
                if (cp > 0x10FFFF) syntax(line, "illegal Unicode character in a string literal");
                ls::utf8_append(out, cp);
                break;
            }
            default:
                if (e >= '0' && e <= '7') {
                    uint32_t cp = uint32_t(e - '0');
                    for (int k = 0; k < 2 && i + 1 < s.size() && s[i + 1] >= '0' && s[i + 1] <= '7'; ++k)
                        cp = cp * 8 + uint32_t(s[++i] - '0');
                    ls::utf8_append(out, cp);
                } else {
                    out += '\\';
                    out += e;
                }
        }
    }
    return out;
}

const char* const kOps[] = {"//", "**", "==", "!=", ">=", "<=", "+", "-", "/", "*", "%", "~", "[", "]",
                            "(", ")", "{", "}", ">", "<", "=", ".", ":", "|", ",", ";"};

class Lexer {
 public:
    Lexer(std::string src, const LexOptions& opt) : s_(std::move(src)), opt_(opt) {}

    std::vector<Token> run() {
        bool line_starting = true;
        while (pos_ < s_.size()) {
            size_t start = find_tag(pos_);
            std::string_view text(s_.data() + pos_, (start == std::string::npos ? s_.size() : start) - pos_);
            if (start == std::string::npos) {
                emit(Token::Data, std::string(text));
                advance_to(s_.size());
                break;
            }
            char kind = s_[start + 1];  // '{', '%' or '#'
            char sign = start + 2 < s_.size() ? s_[start + 2] : 0;
            bool raw = kind == '%' && is_raw_begin(start);
            if (sign == '-') {
                text = rstrip_ws(text);
            } else if (sign != '+' && opt_.lstrip_blocks && kind != '{') {
                size_t l = text.rfind('\n');
                size_t l_pos = l == std::string_view::npos ? 0 : l + 1;
                if ((l_pos > 0 || line_starting) && l_pos < text.size() &&
                    ws_run(text, l_pos) == text.size() - l_pos)
                    text = text.substr(0, l_pos);
            }
            if (!text.empty()) emit(Token::Data, std::string(text));
            advance_to(start);
            size_t body = start + 2 + (sign == '-' || sign == '+' ? 1 : 0);
            if (raw) {
                line_starting = lex_raw(body);
            } else if (kind == '#') {
                line_starting = lex_comment(body);
            } else {
                line_starting = lex_tag(body, kind == '%');
            }
        }
        toks_.push_back(Token{Token::Eof, "", line_});
        return std::move(toks_);
    }

 private:
    std::string s_;
    LexOptions opt_;
    size_t pos_ = 0;
    int line_ = 1;
    std::vector<Token> toks_;

    void emit(Token::T t, std::string text) { toks_.push_back(Token{t, std::move(text), line_}); }

    void advance_to(size_t p) {
        for (size_t i = pos_; i < p; ++i)
            if (s_[i] == '\n') ++line_;
        pos_ = p;
    }

    size_t find_tag(size_t from) const {
        for (size_t i = from; i + 1 < s_.size(); ++i)
            if (s_[i] == '{' && (s_[i + 1] == '{' || s_[i + 1] == '%' || s_[i + 1] == '#')) return i;
        return std::string::npos;
    }

    // `{%[-+]? raw [-]?%}`
    bool is_raw_begin(size_t start) const {
        size_t i = start + 2;
        if (i < s_.size() && (s_[i] == '-' || s_[i] == '+')) ++i;
        i += ws_run(s_, i);
        if (s_.compare(i, 3, "raw") != 0) return false;
        i += 3;
        i += ws_run(s_, i);
        if (i < s_.size() && s_[i] == '-') ++i;
        return s_.compare(i, 2, "%}") == 0;
    }

    // After a block or comment end: `-` eats all whitespace, `+` nothing, else trim_blocks
    // eats one newline. Returns whether the consumed text ends with a newline.
    bool close_tag(size_t end_pos, char sign, bool trim) {
        size_t p = end_pos;
        if (sign == '-') {
            p += ws_run(s_, p);
        } else if (sign != '+' && trim && p < s_.size() && s_[p] == '\n') {
            ++p;
        }
        bool nl = p > 0 && s_[p - 1] == '\n';
        advance_to(p);
        return nl;
    }

    bool lex_comment(size_t body) {
        size_t e = s_.find("#}", body);
        if (e == std::string::npos) syntax(line_, "Missing end of comment tag");
        char sign = e > body && (s_[e - 1] == '-' || s_[e - 1] == '+') ? s_[e - 1] : 0;
        advance_to(e);
        return close_tag(e + 2, sign, opt_.trim_blocks);
    }

    bool lex_raw(size_t body) {
        size_t i = body;
        i += ws_run(s_, i);
        i += 3;  // raw
        i += ws_run(s_, i);
        bool strip_after = s_[i] == '-';
        i += strip_after ? 3 : 2;
        if (strip_after) i += ws_run(s_, i);
        advance_to(i);
        // Find `{%[-+]? endraw ...%}`.
        for (size_t k = s_.find("{%", i); k != std::string::npos; k = s_.find("{%", k + 1)) {
            size_t j = k + 2;
            char sign = j < s_.size() && (s_[j] == '-' || s_[j] == '+') ? s_[j] : 0;
            if (sign) ++j;
            j += ws_run(s_, j);
            if (s_.compare(j, 6, "endraw") != 0) continue;
            j += 6;
            j += ws_run(s_, j);
            char esign = j < s_.size() && (s_[j] == '-' || s_[j] == '+') ? s_[j] : 0;
            if (esign) ++j;
            if (s_.compare(j, 2, "%}") != 0) continue;
            std::string_view text(s_.data() + i, k - i);
            if (sign == '-') {
                text = rstrip_ws(text);
            } else if (sign != '+' && opt_.lstrip_blocks) {
                size_t l = text.rfind('\n');
                size_t l_pos = l == std::string_view::npos ? 0 : l + 1;
                if (l_pos > 0 && l_pos < text.size() && ws_run(text, l_pos) == text.size() - l_pos)
                    text = text.substr(0, l_pos);
            }
            if (!text.empty()) emit(Token::Data, std::string(text));
            advance_to(j);
            return close_tag(j + 2, esign, opt_.trim_blocks);
        }
        syntax(line_, "Missing end of raw directive");
    }

    bool lex_tag(size_t body, bool block) {
        emit(block ? Token::BlockBegin : Token::VarBegin, block ? "{%" : "{{");
        advance_to(body);
        const char* end = block ? "%}" : "}}";
        // Inside brackets an end tag is not one: `{{ {"a": {"b": 1}} }}` (jinja2's balancing stack).
        std::string brackets;
        while (true) {
            if (pos_ >= s_.size()) syntax(line_, std::string("unexpected end of template, expected '") + end + "'");
            // The end tag wins over an operator: `-%}` is always a stripping end.
            char c = s_[pos_];
            if (brackets.empty() && (c == '-' || c == '+') && s_.compare(pos_ + 1, 2, end) == 0 && (c == '-' || block)) {
                emit(block ? Token::BlockEnd : Token::VarEnd, end);
                advance_to(pos_ + 1);
                return close_tag(pos_ + 2, c, block && opt_.trim_blocks);
            }
            if (brackets.empty() && s_.compare(pos_, 2, end) == 0) {
                emit(block ? Token::BlockEnd : Token::VarEnd, end);
                return close_tag(pos_ + 2, 0, block && opt_.trim_blocks);
            }
            size_t ws = ws_run(s_, pos_);
            if (ws) {
                advance_to(pos_ + ws);
                continue;
            }
            if (std::isdigit(uint8_t(c))) {
                lex_number();
                continue;
            }
            if (std::isalpha(uint8_t(c)) || c == '_') {
                size_t j = pos_;
                while (j < s_.size() && (std::isalnum(uint8_t(s_[j])) || s_[j] == '_')) ++j;
                emit(Token::Name, s_.substr(pos_, j - pos_));
                advance_to(j);
                continue;
            }
            if (c == '\'' || c == '"') {
                size_t j = pos_ + 1;
                while (j < s_.size() && s_[j] != c) j += s_[j] == '\\' ? 2 : 1;
                if (j >= s_.size()) syntax(line_, "unexpected end of string literal");
                int line = line_;
                std::string v = unescape(std::string_view(s_).substr(pos_ + 1, j - pos_ - 1), line);
                toks_.push_back(Token{Token::String, std::move(v), line});
                advance_to(j + 1);
                continue;
            }
            bool matched = false;
            for (const char* op : kOps) {
                size_t n = std::strlen(op);
                if (s_.compare(pos_, n, op) == 0) {
                    if (n == 1 && (c == '(' || c == '[' || c == '{')) {
                        brackets += c == '(' ? ')' : c == '[' ? ']' : '}';
                    } else if (n == 1 && (c == ')' || c == ']' || c == '}')) {
                        if (brackets.empty()) syntax(line_, std::string("unexpected '") + c + "'");
                        if (brackets.back() != c)
                            syntax(line_, std::string("unexpected '") + c + "', expected '" + brackets.back() + "'");
                        brackets.pop_back();
                    }
                    emit(Token::Op, op);
                    advance_to(pos_ + n);
                    matched = true;
                    break;
                }
            }
            if (!matched) syntax(line_, std::string("unexpected char '") + c + "'");
        }
    }

    void lex_number() {
        auto digits = [&](size_t j) {
            while (j < s_.size() && (std::isdigit(uint8_t(s_[j])) || (s_[j] == '_' && j + 1 < s_.size() && std::isdigit(uint8_t(s_[j + 1]))))) ++j;
            return j;
        };
        size_t j = digits(pos_);
        bool is_float = false;
        // `x.0.1`-style attribute chains never start a float after a dot.
        bool after_dot = pos_ > 0 && s_[pos_ - 1] == '.';
        if (!after_dot && j + 1 < s_.size() && s_[j] == '.' && std::isdigit(uint8_t(s_[j + 1]))) {
            j = digits(j + 1);
            is_float = true;
        }
        if (!after_dot && j < s_.size() && (s_[j] == 'e' || s_[j] == 'E')) {
            size_t k = j + 1;
            if (k < s_.size() && (s_[k] == '+' || s_[k] == '-')) ++k;
            if (k < s_.size() && std::isdigit(uint8_t(s_[k]))) {
                j = digits(k);
                is_float = true;
            }
        }
        std::string t;
        for (size_t k = pos_; k < j; ++k)
            if (s_[k] != '_') t += s_[k];
        emit(is_float ? Token::Float : Token::Int, t);
        advance_to(j);
    }
};

}  // namespace

std::vector<Token> lex(std::string_view source, const LexOptions& opt) {
    // jinja2 normalises newlines to \n and drops one trailing newline before lexing.
    std::string s;
    s.reserve(source.size());
    for (size_t i = 0; i < source.size(); ++i) {
        if (source[i] == '\r') {
            s += '\n';
            if (i + 1 < source.size() && source[i + 1] == '\n') ++i;
        } else {
            s += source[i];
        }
    }
    if (!opt.keep_trailing_newline && !s.empty() && s.back() == '\n') s.pop_back();
    return Lexer(std::move(s), opt).run();
}

std::string describe(const Token& t) {
    switch (t.type) {
        case Token::Data: return "template data";
        case Token::VarBegin: return "begin of print statement";
        case Token::VarEnd: return "end of print statement";
        case Token::BlockBegin: return "begin of statement block";
        case Token::BlockEnd: return "end of statement block";
        case Token::Name: return "'" + t.text + "'";
        case Token::String: return "string";
        case Token::Int: return "integer";
        case Token::Float: return "float";
        case Token::Op: return "'" + t.text + "'";
        case Token::Eof: return "end of template";
    }
    return "token";
}

}  // namespace ls::jinja
