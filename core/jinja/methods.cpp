// Attribute and item access as jinja2's ImmutableSandboxedEnvironment resolves them, and the
// Python str/dict/list methods a template can reach. Methods that would mutate a list or dict
// resolve to an "unsafe" undefined: calling it fails as the sandbox's SecurityError does.
#include <algorithm>
#include <cstring>

#include "core/jinja/internal.h"

namespace ls::jinja {

Value arg(Args& a, size_t pos, std::string_view name, Value dflt) {
    if (pos < a.pos.size()) return a.pos[pos];
    for (auto& [k, v] : a.kw)
        if (k == name) return v;
    return dflt;
}

bool has_arg(Args& a, size_t pos, std::string_view name) {
    if (pos < a.pos.size()) return true;
    for (auto& [k, v] : a.kw)
        if (k == name) return true;
    return false;
}

std::vector<Value> iterate(const Value& v) {
    switch (v.kind()) {
        case Value::Kind::Undefined: return {};
        case Value::Kind::List: return v.items();
        case Value::Kind::Dict: {
            std::vector<Value> keys;
            for (const auto& [k, x] : v.entries()) keys.push_back(k);
            return keys;
        }
        case Value::Kind::String: {
            std::vector<Value> out;
            for (auto c : code_points(v.str())) out.emplace_back(c);
            return out;
        }
        default: fail("'" + v.type_name() + "' object is not iterable");
    }
}

namespace {

std::string object_type(const Value& v) { return v.is_none() ? "None" : v.type_name() + " object"; }

Value no_attribute(const Value& obj, const std::string& name) {
    return Value::undefined("'" + object_type(obj) + "' has no attribute '" + name + "'");
}

std::string need_str(const Value& v, const char* what) {
    if (v.is_string()) return v.str();
    if (v.is_undefined()) fail(v.str());
    fail(std::string(what) + " argument must be str, not " + v.type_name());
}

// Byte offset of code point index `cp` (clamped), and the reverse.
size_t byte_at(const std::string& s, int64_t cp) {
    size_t i = 0;
    for (int64_t n = 0; i < s.size() && n < cp; ++n) {
        ++i;
        while (i < s.size() && (uint8_t(s[i]) & 0xC0) == 0x80) ++i;
    }
    return i;
}
int64_t cp_at(const std::string& s, size_t byte) { return int64_t(cp_length(std::string_view(s).substr(0, byte))); }

// Python's (start, end) optional arguments, as byte offsets.
std::pair<size_t, size_t> span(const std::string& s, Args& a, size_t first) {
    int64_t n = int64_t(cp_length(s));
    auto norm = [&](const Value& v, int64_t d) {
        if (v.is_none() || v.is_undefined()) return d;
        int64_t x = checked_int(v, "slice");
        if (x < 0) x = std::max<int64_t>(0, x + n);
        return std::min(x, n);
    };
    int64_t b = norm(arg(a, first, "start", Value(nullptr)), 0);
    int64_t e = norm(arg(a, first + 1, "end", Value(nullptr)), n);
    return {byte_at(s, b), byte_at(s, std::max(b, e))};
}

Value split(const std::string& s, const Value& sep, int64_t maxsplit, bool from_right) {
    Value::List out;
    if (sep.is_none() || sep.is_undefined()) {
        // Runs of whitespace separate; leading and trailing whitespace give no empty parts.
        auto cps = code_points(s);
        auto is_ws = [&](size_t i) { return cps[i].size() == 1 ? is_py_space(uint8_t(cps[i][0])) : is_py_space(cps[i] == "\xc2\xa0" ? 0xA0 : cps[i] == "\xe3\x80\x80" ? 0x3000 : 0); };
        std::vector<std::pair<size_t, size_t>> words;  // code point ranges
        size_t i = 0, n = cps.size();
        if (!from_right) {
            while (true) {
                while (i < n && is_ws(i)) ++i;
                if (i >= n) break;
                if (maxsplit >= 0 && int64_t(words.size()) == maxsplit) {
                    words.emplace_back(i, n);  // the remainder keeps its trailing whitespace
                    break;
                }
                size_t b = i;
                while (i < n && !is_ws(i)) ++i;
                words.emplace_back(b, i);
            }
        } else {
            size_t e = n;
            while (true) {
                while (e > 0 && is_ws(e - 1)) --e;
                if (e == 0) break;
                if (maxsplit >= 0 && int64_t(words.size()) == maxsplit) {
                    words.emplace_back(0, e);
                    break;
                }
                size_t b = e;
                while (b > 0 && !is_ws(b - 1)) --b;
                words.emplace_back(b, e);
                e = b;
            }
            std::reverse(words.begin(), words.end());
        }
        for (auto [b, e] : words) {
            std::string w;
            for (size_t k = b; k < e; ++k) w += cps[k];
            out.emplace_back(std::move(w));
        }
        return Value::list(std::move(out));
    }
    std::string sp = need_str(sep, "split");
    if (sp.empty()) fail("empty separator");
    if (!from_right) {
        size_t pos = 0;
        while (maxsplit < 0 || int64_t(out.size()) < maxsplit) {
            size_t f = s.find(sp, pos);
            if (f == std::string::npos) break;
            out.emplace_back(s.substr(pos, f - pos));
            pos = f + sp.size();
        }
        out.emplace_back(s.substr(pos));
        return Value::list(std::move(out));
    }
    size_t end = s.size();
    while (maxsplit < 0 || int64_t(out.size()) < maxsplit) {
        if (end < sp.size()) break;
        size_t f = s.rfind(sp, end - sp.size());
        if (f == std::string::npos) break;
        out.emplace_back(s.substr(f + sp.size(), end - f - sp.size()));
        end = f;
    }
    out.emplace_back(s.substr(0, end));
    std::reverse(out.begin(), out.end());
    return Value::list(std::move(out));
}

bool ascii_alpha(uint8_t c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }

// Python's str.title(): a cased character after an uncased one starts a word.
std::string py_title(const std::string& s) {
    std::string out;
    bool prev_cased = false;
    for (auto c : code_points(s)) {
        std::string up = py_upper(c), low = py_lower(c);
        bool cased = up != low;
        out += cased ? (prev_cased ? low : up) : std::string(c);
        prev_cased = cased;
    }
    return out;
}

std::string py_capitalize(const std::string& s) {
    auto cps = code_points(s);
    std::string out;
    for (size_t i = 0; i < cps.size(); ++i) out += i == 0 ? py_upper(cps[i]) : py_lower(cps[i]);
    return out;
}

// str.format with `{}`, `{0}`, `{name}`, `!s`/`!r` and `{{`/`}}`; format specs are refused.
std::string py_format(const std::string& fmt, Args& a) {
    std::string out;
    size_t auto_idx = 0;
    for (size_t i = 0; i < fmt.size(); ++i) {
        char c = fmt[i];
        if (c == '}' ) {
            if (i + 1 < fmt.size() && fmt[i + 1] == '}') ++i;
            else fail("Single '}' encountered in format string");
            out += '}';
            continue;
        }
        if (c != '{') {
            out += c;
            continue;
        }
        if (i + 1 < fmt.size() && fmt[i + 1] == '{') {
            out += '{';
            ++i;
            continue;
        }
        size_t e = fmt.find('}', i);
        if (e == std::string::npos) fail("Single '{' encountered in format string");
        std::string field = fmt.substr(i + 1, e - i - 1);
        i = e;
        char conv = 0;
        if (size_t bang = field.find('!'); bang != std::string::npos) {
            conv = bang + 1 < field.size() ? field[bang + 1] : 0;
            field = field.substr(0, bang);
        }
        if (field.find(':') != std::string::npos) fail("format specs in str.format are not supported");
        Value v;
        if (field.empty()) {
            if (auto_idx >= a.pos.size()) fail("Replacement index " + std::to_string(auto_idx) + " out of range for positional args tuple");
            v = a.pos[auto_idx++];
        } else if (std::isdigit(uint8_t(field[0]))) {
            size_t k = std::stoul(field);
            if (k >= a.pos.size()) fail("Replacement index " + field + " out of range for positional args tuple");
            v = a.pos[k];
        } else {
            bool found = false;
            for (auto& [kn, kv] : a.kw)
                if (kn == field) {
                    v = kv;
                    found = true;
                }
            if (!found) fail("KeyError: '" + field + "'");
        }
        out += conv == 'r' ? v.repr() : v.to_str();
    }
    return out;
}

bool starts_or_ends(const std::string& s, Args& a, bool ends) {
    Value p = arg(a, 0, "prefix");
    auto [b, e] = span(s, a, 1);
    std::string_view sub = std::string_view(s).substr(b, e - b);
    auto test = [&](const Value& x) {
        std::string t = need_str(x, ends ? "endswith" : "startswith");
        if (t.size() > sub.size()) return false;
        return ends ? sub.compare(sub.size() - t.size(), t.size(), t) == 0 : sub.compare(0, t.size(), t) == 0;
    };
    if (p.is_tuple()) {
        for (const Value& x : p.items())
            if (test(x)) return true;
        return false;
    }
    return test(p);
}

template <class P>
Value all_cps(const std::string& s, P pred) {
    if (s.empty()) return Value(false);
    for (unsigned char c : s)
        if (!pred(c)) return Value(false);
    return Value(true);
}

Value str_method(const std::string& s, const std::string& name, Args& a) {
    if (name == "strip") return Value(py_strip(s, true, true, arg(a, 0, "chars", Value(nullptr))));
    if (name == "lstrip") return Value(py_strip(s, true, false, arg(a, 0, "chars", Value(nullptr))));
    if (name == "rstrip") return Value(py_strip(s, false, true, arg(a, 0, "chars", Value(nullptr))));
    if (name == "split" || name == "rsplit") {
        Value ms = arg(a, 1, "maxsplit", Value(-1));
        return split(s, arg(a, 0, "sep", Value(nullptr)), checked_int(ms, "maxsplit"), name == "rsplit");
    }
    if (name == "splitlines") {
        Value::List out;
        bool keep = arg(a, 0, "keepends", Value(false)).truthy();
        size_t b = 0;
        for (size_t i = 0; i < s.size(); ++i) {
            if (s[i] == '\n' || s[i] == '\r') {
                size_t e = i;
                if (s[i] == '\r' && i + 1 < s.size() && s[i + 1] == '\n') ++i;
                out.emplace_back(s.substr(b, (keep ? i + 1 : e) - b));
                b = i + 1;
            }
        }
        if (b < s.size()) out.emplace_back(s.substr(b));
        return Value::list(std::move(out));
    }
    if (name == "startswith") return Value(starts_or_ends(s, a, false));
    if (name == "endswith") return Value(starts_or_ends(s, a, true));
    if (name == "upper") return Value(py_upper(s));
    if (name == "lower" || name == "casefold") return Value(py_lower(s));
    if (name == "title") return Value(py_title(s));
    if (name == "capitalize") return Value(py_capitalize(s));
    if (name == "swapcase") {
        std::string out;
        for (auto c : code_points(s)) out += py_upper(c) != c ? py_upper(c) : py_lower(c);
        return Value(out);
    }
    if (name == "replace") {
        std::string from = need_str(arg(a, 0, "old"), "replace"), to = need_str(arg(a, 1, "new"), "replace");
        int64_t count = checked_int(arg(a, 2, "count", Value(-1)), "replace");
        std::string out;
        if (from.empty()) {
            // Python inserts `to` between code points (and at both ends).
            auto cps = code_points(s);
            int64_t done = 0;
            for (size_t i = 0; i <= cps.size(); ++i) {
                if (count < 0 || done < count) {
                    out += to;
                    ++done;
                }
                if (i < cps.size()) out += cps[i];
            }
            return Value(out);
        }
        size_t pos = 0;
        for (int64_t done = 0; count < 0 || done < count; ++done) {
            size_t f = s.find(from, pos);
            if (f == std::string::npos) break;
            out.append(s, pos, f - pos);
            out += to;
            pos = f + from.size();
        }
        out.append(s, pos);
        return Value(out);
    }
    if (name == "find" || name == "rfind" || name == "index" || name == "rindex" || name == "count") {
        std::string sub = need_str(arg(a, 0, "sub"), name.c_str());
        auto [b, e] = span(s, a, 1);
        std::string_view hay = std::string_view(s).substr(b, e - b);
        if (name == "count") {
            if (sub.empty()) return Value(int64_t(cp_length(hay) + 1));
            int64_t n = 0;
            for (size_t p = hay.find(sub); p != std::string_view::npos; p = hay.find(sub, p + sub.size())) ++n;
            return Value(n);
        }
        size_t f = name[0] == 'r' ? hay.rfind(sub) : hay.find(sub);
        if (f == std::string_view::npos) {
            if (name == "index" || name == "rindex") fail("substring not found");
            return Value(int64_t(-1));
        }
        return Value(cp_at(s, b + f));
    }
    if (name == "join") {
        std::string out;
        bool first = true;
        for (const Value& x : iterate(arg(a, 0, "iterable"))) {
            if (!first) out += s;
            first = false;
            out += need_str(x, "join");
        }
        return Value(out);
    }
    if (name == "format") return Value(py_format(s, a));
    if (name == "removeprefix") {
        std::string p = need_str(arg(a, 0, "prefix"), name.c_str());
        return Value(s.compare(0, p.size(), p) == 0 ? s.substr(p.size()) : s);
    }
    if (name == "removesuffix") {
        std::string p = need_str(arg(a, 0, "suffix"), name.c_str());
        return Value(!p.empty() && s.size() >= p.size() && s.compare(s.size() - p.size(), p.size(), p) == 0
                         ? s.substr(0, s.size() - p.size())
                         : s);
    }
    if (name == "isdigit" || name == "isnumeric" || name == "isdecimal")
        return all_cps(s, [](uint8_t c) { return c >= '0' && c <= '9'; });
    if (name == "isalpha") return all_cps(s, [](uint8_t c) { return ascii_alpha(c) || c >= 0x80; });
    if (name == "isalnum") return all_cps(s, [](uint8_t c) { return ascii_alpha(c) || (c >= '0' && c <= '9') || c >= 0x80; });
    if (name == "isspace") return all_cps(s, [](uint8_t c) { return is_py_space(c); });
    if (name == "islower" || name == "isupper") {
        bool any = false;
        for (auto c : code_points(s)) {
            std::string up = py_upper(c), low = py_lower(c);
            if (up == low) continue;
            any = true;
            if ((name == "islower") != (low == c)) return Value(false);
        }
        return Value(any);
    }
    if (name == "zfill") {
        int64_t w = checked_int(arg(a, 0, "width"), "zfill");
        int64_t n = int64_t(cp_length(s));
        if (w <= n) return Value(s);
        size_t sign = !s.empty() && (s[0] == '+' || s[0] == '-') ? 1 : 0;
        return Value(s.substr(0, sign) + std::string(size_t(w - n), '0') + s.substr(sign));
    }
    if (name == "partition" || name == "rpartition") {
        std::string sep = need_str(arg(a, 0, "sep"), name.c_str());
        if (sep.empty()) fail("empty separator");
        size_t f = name[0] == 'r' ? s.rfind(sep) : s.find(sep);
        if (f == std::string::npos)
            return name[0] == 'r' ? Value::list({Value(""), Value(""), Value(s)}, true)
                                  : Value::list({Value(s), Value(""), Value("")}, true);
        return Value::list({Value(s.substr(0, f)), Value(sep), Value(s.substr(f + sep.size()))}, true);
    }
    fail("str method '" + name + "' is not supported");
}

const char* const kStrMethods[] = {"strip", "lstrip", "rstrip", "split", "rsplit", "splitlines", "startswith", "endswith",
                                   "upper", "lower", "casefold", "title", "capitalize", "swapcase", "replace", "find",
                                   "rfind", "index", "rindex", "count", "join", "format", "removeprefix", "removesuffix",
                                   "isdigit", "isnumeric", "isdecimal", "isalpha", "isalnum", "isspace", "islower",
                                   "isupper", "zfill", "partition", "rpartition"};
const char* const kDictMethods[] = {"items", "keys", "values", "get", "copy"};
const char* const kDictUnsafe[] = {"pop", "popitem", "setdefault", "update", "clear"};
const char* const kListMethods[] = {"index", "count", "copy"};
const char* const kListUnsafe[] = {"append", "extend", "insert", "pop", "remove", "reverse", "sort", "clear"};

template <size_t N>
bool in(const char* const (&names)[N], const std::string& n) {
    for (const char* x : names)
        if (n == x) return true;
    return false;
}

Value dict_method(const Value& d, const std::string& name, Args& a) {
    if (name == "items") {
        Value::List out;
        for (const auto& [k, v] : d.entries()) out.push_back(Value::list({k, v}, true));
        return Value::list(std::move(out));
    }
    if (name == "keys" || name == "values") {
        Value::List out;
        for (const auto& [k, v] : d.entries()) out.push_back(name == "keys" ? k : v);
        return Value::list(std::move(out));
    }
    if (name == "get") {
        const Value* v = d.find(arg(a, 0, "key"));
        return v ? *v : arg(a, 1, "default", Value(nullptr));
    }
    return Value::dict(d.entries());  // copy
}

Value list_method(const Value& l, const std::string& name, Args& a) {
    Value x = arg(a, 0, "value");
    if (name == "copy") return Value::list(l.items());
    int64_t n = 0;
    for (size_t i = 0; i < l.items().size(); ++i) {
        if (!equals(l.items()[i], x)) continue;
        if (name == "index") return Value(int64_t(i));
        ++n;
    }
    if (name == "index") fail(x.repr() + " is not in list");
    return Value(n);
}

Value unsafe(const Value& obj, const std::string& name) {
    return Value::undefined("access to attribute '" + name + "' of '" + obj.type_name() + "' object is unsafe.", true);
}

}  // namespace

Value get_attr(const Value& obj, const std::string& name, bool items) {
    switch (obj.kind()) {
        case Value::Kind::Undefined: fail(obj.str());
        case Value::Kind::String:
            if (in(kStrMethods, name))
                return Value::function(name, [s = obj.str(), name](Args& a) { return str_method(s, name, a); });
            return no_attribute(obj, name);
        case Value::Kind::Dict:
            if (in(kDictMethods, name))
                return Value::function(name, [obj, name](Args& a) { return dict_method(obj, name, a); });
            if (in(kDictUnsafe, name)) return unsafe(obj, name);
            if (!items) return no_attribute(obj, name);
            if (const Value* v = obj.find(std::string_view(name))) return *v;
            return no_attribute(obj, name);
        case Value::Kind::List:
            if (obj.is_generator()) return no_attribute(obj, name);
            if (in(kListMethods, name))
                return Value::function(name, [obj, name](Args& a) { return list_method(obj, name, a); });
            if (in(kListUnsafe, name)) return unsafe(obj, name);
            return no_attribute(obj, name);
        case Value::Kind::Namespace:
            if (const Value* v = obj.find(std::string_view(name))) return *v;
            return no_attribute(obj, name);
        default: return no_attribute(obj, name);
    }
}

Value get_item(const Value& obj, const Value& key) {
    switch (obj.kind()) {
        case Value::Kind::Undefined: fail(obj.str());
        case Value::Kind::Dict:
        case Value::Kind::Namespace:
            if (const Value* v = obj.find(key)) return *v;
            break;
        case Value::Kind::List:
        case Value::Kind::String:
            if (obj.is_generator()) break;
            if (key.is_int() || key.is_bool()) {
                int64_t i = key.as_int();
                if (obj.is_list()) {
                    int64_t n = int64_t(obj.items().size());
                    if (i < 0) i += n;
                    if (i >= 0 && i < n) return obj.items()[size_t(i)];
                } else {
                    auto cps = code_points(obj.str());
                    int64_t n = int64_t(cps.size());
                    if (i < 0) i += n;
                    if (i >= 0 && i < n) return Value(cps[size_t(i)]);
                }
                return Value::undefined("'" + object_type(obj) + "' has no element " + key.repr());
            }
            break;
        default: break;
    }
    if (key.is_string()) {
        if (obj.is_namespace()) return no_attribute(obj, key.str());
        return get_attr(obj, key.str());
    }
    return Value::undefined("'" + object_type(obj) + "' has no element " + key.repr());
}

}  // namespace ls::jinja
