// GBNF, as llama.cpp reads it: `name ::= alternatives`, one rule per line (a rule continues
// over newlines only inside parentheses or after `|`), literals, character classes, `.`,
// groups, the postfix operators * + ? {m} {m,} {m,n}, and # comments to the end of a line.
#include <algorithm>
#include <cstring>
#include <unordered_map>

#include "core/grammar/grammar.h"

namespace ls::grammar {

namespace {

struct Item {
    bool is_ref;
    uint32_t id;  // rule id or class id
};
using Seq = std::vector<Item>;

struct RuleDef {
    std::string name;
    std::vector<Seq> alts;
    bool defined = false;
    size_t first_use = std::string::npos;  // offset of the first reference, for errors
    size_t def_at = 0;
};

// The user's rule a helper rule was made for: "expr/3" -> "expr".
std::string user_name(const std::string& n) { return n.substr(0, n.find('/')); }

bool is_name_char(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_';
}

}  // namespace

struct Grammar::Builder {
    std::string_view src;
    const GrammarLimits& lim;
    size_t pos = 0;
    std::vector<RuleDef> rules;
    std::unordered_map<std::string, uint32_t> by_name;
    std::vector<CharClass> classes;
    std::unordered_map<uint32_t, uint32_t> single_char;  // code point -> class id
    size_t n_items = 0;
    int depth = 0;

    Builder(std::string_view s, const GrammarLimits& l) : src(s), lim(l) {}

    [[noreturn]] void fail(size_t at, const std::string& what) const {
        size_t line = 1, col = 1;
        for (size_t i = 0; i < at && i < src.size(); ++i) {
            if (src[i] == '\n') { ++line; col = 1; } else { ++col; }
        }
        throw Error("grammar: line " + std::to_string(line) + ", column " + std::to_string(col) + ": " + what);
    }

    bool eof() const { return pos >= src.size(); }
    char peek() const { return eof() ? '\0' : src[pos]; }

    void skip_space(bool newline_ok) {
        while (!eof()) {
            char c = src[pos];
            if (c == ' ' || c == '\t') {
                ++pos;
            } else if (c == '#') {
                while (!eof() && src[pos] != '\n' && src[pos] != '\r') ++pos;
            } else if (newline_ok && (c == '\n' || c == '\r')) {
                ++pos;
            } else {
                break;
            }
        }
    }

    uint32_t rule_id(const std::string& name) {
        auto it = by_name.find(name);
        if (it != by_name.end()) return it->second;
        if (rules.size() >= lim.max_rules) fail(pos, "more than " + std::to_string(lim.max_rules) + " rules");
        uint32_t id = uint32_t(rules.size());
        rules.push_back({name, {}, false, std::string::npos, 0});
        by_name.emplace(name, id);
        return id;
    }

    uint32_t helper_rule(uint32_t parent) {
        if (rules.size() >= lim.max_rules) fail(pos, "more than " + std::to_string(lim.max_rules) + " rules");
        uint32_t id = uint32_t(rules.size());
        rules.push_back({user_name(rules[parent].name) + "/" + std::to_string(id), {}, true, std::string::npos, pos});
        return id;
    }

    void count_items(size_t n) {
        n_items += n;
        if (n_items > lim.max_elements)
            fail(pos, "the grammar expands to more than " + std::to_string(lim.max_elements) + " elements");
    }

    uint32_t add_class(CharClass c) {
        c.finish();
        classes.push_back(std::move(c));
        return uint32_t(classes.size() - 1);
    }

    uint32_t char_item(uint32_t cp) {
        auto it = single_char.find(cp);
        if (it != single_char.end()) return it->second;
        CharClass c;
        c.ranges.push_back({cp, cp});
        uint32_t id = add_class(std::move(c));
        single_char.emplace(cp, id);
        return id;
    }

    uint32_t hex(size_t n) {
        uint32_t v = 0;
        for (size_t i = 0; i < n; ++i) {
            char c = peek();
            int d = (c >= '0' && c <= '9') ? c - '0' : (c >= 'a' && c <= 'f') ? c - 'a' + 10 : (c >= 'A' && c <= 'F') ? c - 'A' + 10 : -1;
            if (d < 0) fail(pos, "expected " + std::to_string(n) + " hex digits in an escape");
            v = v * 16 + uint32_t(d);
            ++pos;
        }
        if (v > 0x10FFFF) fail(pos, "code point above U+10FFFF");
        return v;
    }

    // One code point of a literal or class: an escape or a UTF-8 sequence.
    uint32_t parse_char() {
        if (eof()) fail(pos, "unexpected end of grammar");
        unsigned char c = (unsigned char)src[pos];
        if (c == '\\') {
            ++pos;
            char e = peek();
            ++pos;
            switch (e) {
                case 'x': return hex(2);
                case 'u': return hex(4);
                case 'U': return hex(8);
                case 't': return '\t';
                case 'r': return '\r';
                case 'n': return '\n';
                case '\\': case '"': case '[': case ']': case '-': case '^': case '/': case '\'': return uint32_t(e);
                default: fail(pos - 2, std::string("unknown escape \\") + (e ? std::string(1, e) : std::string()));
            }
        }
        size_t len = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
        if (len == 0 || pos + len > src.size()) fail(pos, "invalid UTF-8 in the grammar");
        uint32_t cp = len == 1 ? c : len == 2 ? (c & 0x1F) : len == 3 ? (c & 0x0F) : (c & 0x07);
        for (size_t i = 1; i < len; ++i) {
            unsigned char k = (unsigned char)src[pos + i];
            if ((k & 0xC0) != 0x80) fail(pos, "invalid UTF-8 in the grammar");
            cp = (cp << 6) | (k & 0x3F);
        }
        pos += len;
        return cp;
    }

    uint32_t parse_number() {
        size_t start = pos;
        uint64_t v = 0;
        while (!eof() && src[pos] >= '0' && src[pos] <= '9') {
            v = v * 10 + uint64_t(src[pos] - '0');
            if (v > lim.max_repetition) fail(start, "repetition count above " + std::to_string(lim.max_repetition));
            ++pos;
        }
        if (pos == start) fail(pos, "expected a number");
        return uint32_t(v);
    }

    // Replaces the atom seq[from..] by `n` copies of it followed by up to `opt` optional copies
    // (opt < 0: any number more).
    void repeat(uint32_t rule, Seq& seq, size_t from, uint32_t min, int64_t opt) {
        Seq atom(seq.begin() + long(from), seq.end());
        seq.resize(from);
        if (atom.empty()) return;
        if (atom.size() > 1) {  // a literal "abc": one helper rule, so copies are one element each
            uint32_t w = helper_rule(rule);
            rules[w].alts.push_back(atom);
            atom = {{true, w}};
        }
        count_items(size_t(min) + 3 * size_t(opt < 0 ? 1 : opt));
        for (uint32_t i = 0; i < min; ++i) seq.push_back(atom[0]);
        if (opt < 0) {
            uint32_t s = helper_rule(rule);  // S ::= x S | ε
            rules[s].alts.push_back({atom[0], {true, s}});
            rules[s].alts.push_back({});
            seq.push_back({true, s});
        } else if (opt > 0) {
            // O1 ::= x | ε, Ok ::= x O(k-1) | ε: the optional tail nests on the right.
            uint32_t prev = 0;
            for (int64_t k = 1; k <= opt; ++k) {
                uint32_t o = helper_rule(rule);
                if (k == 1) rules[o].alts.push_back({atom[0]});
                else rules[o].alts.push_back({atom[0], {true, prev}});
                rules[o].alts.push_back({});
                prev = o;
            }
            seq.push_back({true, prev});
        }
    }

    void parse_class(Seq& seq) {
        size_t start = pos;
        ++pos;  // [
        CharClass c;
        if (peek() == '^') { c.negated = true; ++pos; }
        while (peek() != ']') {
            if (eof()) fail(start, "unterminated character class");
            uint32_t lo = parse_char();
            uint32_t hi = lo;
            if (peek() == '-' && pos + 1 < src.size() && src[pos + 1] != ']') {
                ++pos;
                hi = parse_char();
                if (hi < lo) fail(start, "character range out of order");
            }
            c.ranges.push_back({lo, hi});
        }
        ++pos;
        seq.push_back({false, add_class(std::move(c))});
        count_items(1);
    }

    Seq parse_sequence(uint32_t rule, bool nested) {
        Seq seq;
        size_t atom = std::string::npos;  // where the last atom starts in seq
        while (!eof()) {
            char c = peek();
            size_t before = seq.size();
            if (c == '"') {
                size_t start = pos++;
                while (peek() != '"') {
                    if (eof() || peek() == '\n') fail(start, "unterminated string literal");
                    seq.push_back({false, char_item(parse_char())});
                    count_items(1);
                }
                ++pos;
                atom = before;
            } else if (c == '[') {
                parse_class(seq);
                atom = before;
            } else if (c == '.') {
                ++pos;
                CharClass any;
                any.negated = true;
                seq.push_back({false, add_class(std::move(any))});
                count_items(1);
                atom = before;
            } else if (c == '(') {
                size_t open = pos++;
                if (++depth > lim.max_nesting) fail(open, "groups nested deeper than " + std::to_string(lim.max_nesting));
                skip_space(true);
                uint32_t g = helper_rule(rule);
                auto alts = parse_alternatives(g, true);
                rules[g].alts = std::move(alts);
                if (peek() != ')') fail(pos, "expected ')' to close the group opened at " + where(open));
                ++pos;
                --depth;
                seq.push_back({true, g});
                count_items(1);
                atom = before;
            } else if (is_name_char(c)) {
                size_t start = pos;
                while (!eof() && is_name_char(src[pos])) ++pos;
                std::string name(src.substr(start, pos - start));
                size_t save = pos;
                skip_space(false);
                if (src.substr(pos, 3) == "::=") fail(start, "expected a newline before the rule '" + name + "'");
                pos = save;
                uint32_t r = rule_id(name);
                if (rules[r].first_use == std::string::npos) rules[r].first_use = start;
                seq.push_back({true, r});
                count_items(1);
                atom = before;
            } else if (c == '*' || c == '+' || c == '?' || c == '{') {
                if (atom == std::string::npos) fail(pos, std::string("'") + c + "' with nothing before it to repeat");
                ++pos;
                if (c == '*') repeat(rule, seq, atom, 0, -1);
                else if (c == '+') repeat(rule, seq, atom, 1, -1);
                else if (c == '?') repeat(rule, seq, atom, 0, 1);
                else {
                    skip_space(false);
                    uint32_t m = parse_number();
                    int64_t opt = 0;
                    skip_space(false);
                    if (peek() == ',') {
                        ++pos;
                        skip_space(false);
                        if (peek() == '}') {
                            opt = -1;
                        } else {
                            uint32_t n = parse_number();
                            if (n < m) fail(pos, "repetition {m,n} with n < m");
                            opt = int64_t(n) - m;
                        }
                        skip_space(false);
                    }
                    if (peek() != '}') fail(pos, "expected '}' to close the repetition");
                    ++pos;
                    repeat(rule, seq, atom, m, opt);
                }
                // A further operator applies to what this one made.
                if (seq.size() - atom > 1) {
                    uint32_t w = helper_rule(rule);
                    rules[w].alts.push_back(Seq(seq.begin() + long(atom), seq.end()));
                    seq.resize(atom);
                    seq.push_back({true, w});
                }
            } else if (c == '<') {
                fail(pos, "token references (<...>) are not supported");
            } else {
                break;
            }
            skip_space(nested);
        }
        return seq;
    }

    std::string where(size_t at) const {
        size_t line = 1, col = 1;
        for (size_t i = 0; i < at && i < src.size(); ++i) {
            if (src[i] == '\n') { ++line; col = 1; } else { ++col; }
        }
        return "line " + std::to_string(line) + ", column " + std::to_string(col);
    }

    std::vector<Seq> parse_alternatives(uint32_t rule, bool nested) {
        std::vector<Seq> alts;
        alts.push_back(parse_sequence(rule, nested));
        while (peek() == '|') {
            ++pos;
            skip_space(true);
            alts.push_back(parse_sequence(rule, nested));
        }
        return alts;
    }

    void parse_all() {
        if (src.size() > lim.max_text_bytes) fail(0, "grammar text above " + std::to_string(lim.max_text_bytes) + " bytes");
        skip_space(true);
        if (eof()) fail(0, "empty grammar (no rules)");
        while (!eof()) {
            size_t start = pos;
            while (!eof() && is_name_char(src[pos])) ++pos;
            if (pos == start) fail(pos, "expected a rule name");
            std::string name(src.substr(start, pos - start));
            skip_space(false);
            if (src.substr(pos, 3) != "::=") fail(pos, "expected '::=' after the rule name '" + name + "'");
            pos += 3;
            skip_space(true);
            uint32_t r = rule_id(name);
            if (rules[r].defined) fail(start, "rule '" + name + "' defined twice (first at " + where(rules[r].def_at) + ")");
            rules[r].defined = true;
            rules[r].def_at = start;
            auto alts = parse_alternatives(r, false);
            rules[r].alts = std::move(alts);
            if (!eof()) {
                if (peek() == '\r') ++pos;
                if (peek() != '\n') fail(pos, std::string("unexpected '") + peek() + "' (expected a newline, '|' or an element)");
            }
            skip_space(true);
        }
    }
};

namespace {

// Finds a rule that can reach itself without consuming a code point, or -1.
int64_t find_left_recursion(const std::vector<RuleDef>& rules) {
    size_t n = rules.size();
    std::vector<char> nullable(n, 0);
    for (bool changed = true; changed;) {
        changed = false;
        for (size_t r = 0; r < n; ++r) {
            if (nullable[r]) continue;
            for (const auto& seq : rules[r].alts) {
                bool all = true;
                for (const auto& it : seq)
                    if (!it.is_ref || !nullable[it.id]) { all = false; break; }
                if (all) { nullable[r] = 1; changed = true; break; }
            }
        }
    }
    std::vector<std::vector<uint32_t>> left(n);
    for (size_t r = 0; r < n; ++r)
        for (const auto& seq : rules[r].alts)
            for (const auto& it : seq) {
                if (!it.is_ref) break;
                left[r].push_back(it.id);
                if (!nullable[it.id]) break;
            }
    // Iterative DFS (a hostile chain of rules must not overflow the call stack).
    std::vector<char> color(n, 0);  // 0 new, 1 on the path, 2 done
    std::vector<std::pair<uint32_t, size_t>> stack;
    for (size_t s = 0; s < n; ++s) {
        if (color[s]) continue;
        stack.push_back({uint32_t(s), 0});
        color[s] = 1;
        while (!stack.empty()) {
            auto& [r, i] = stack.back();
            if (i < left[r].size()) {
                uint32_t t = left[r][i++];
                if (color[t] == 1) return t;
                if (color[t] == 0) { color[t] = 1; stack.push_back({t, 0}); }
            } else {
                color[r] = 2;
                stack.pop_back();
            }
        }
    }
    return -1;
}

}  // namespace

std::shared_ptr<const Grammar> Grammar::parse(std::string_view gbnf, std::string_view root, const GrammarLimits& limits) {
    Builder b(gbnf, limits);
    b.parse_all();
    for (const auto& r : b.rules)
        if (!r.defined) b.fail(r.first_use, "undefined rule '" + r.name + "'");
    auto it = b.by_name.find(std::string(root));
    if (it == b.by_name.end()) throw Error("grammar: no rule named '" + std::string(root) + "' to start from");
    int64_t lr = find_left_recursion(b.rules);
    if (lr >= 0)
        throw Error("grammar: rule '" + user_name(b.rules[size_t(lr)].name) +
                    "' is left-recursive (it can reach itself before matching a character); rewrite it with repetition");

    auto g = std::make_shared<Grammar>();
    g->classes_ = std::move(b.classes);
    g->root_ = it->second;
    g->alts_.resize(b.rules.size());
    for (size_t r = 0; r < b.rules.size(); ++r) {
        g->names_.push_back(b.rules[r].name);
        const auto& alts = b.rules[r].alts;
        for (size_t a = 0; a < alts.size(); ++a) {
            g->alts_[r].push_back(uint32_t(g->elems_.size()));
            for (const auto& item : alts[a])
                g->elems_.push_back({item.is_ref ? Kind::Ref : Kind::Class, item.id});
            g->elems_.push_back({a + 1 == alts.size() ? Kind::End : Kind::Alt, 0});
        }
    }
    // FNV-1a over the program, the classes and the start rule.
    uint64_t h = 1469598103934665603ull;
    auto mix = [&](uint64_t v) { for (int i = 0; i < 8; ++i) { h ^= (v >> (8 * i)) & 0xFF; h *= 1099511628211ull; } };
    mix(g->root_);
    for (const auto& e : g->elems_) mix((uint64_t(e.kind) << 32) | e.arg);
    for (const auto& c : g->classes_) {
        mix(c.negated ? 0xABCDull : 0x1234ull);
        for (const auto& [lo, hi] : c.ranges) mix((uint64_t(lo) << 32) | hi);
    }
    g->fingerprint_ = h;
    return g;
}

}  // namespace ls::grammar
