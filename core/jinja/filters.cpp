// jinja2's builtin filters (filters.py, 3.1) with Hugging Face's tojson; each follows the
// Python function's argument names, defaults and quirks.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>

#include "core/jinja/interp.h"

namespace ls::jinja {

namespace {

using Fn = FilterFn;

std::string soft_str(const Value& v) { return v.to_str(); }

// A filter's `attribute` argument: dotted parts, digits as indices, looked up item-first.
Value attr_path(const Value& v, const Value& attribute, const Value& dflt = Value()) {
    if (attribute.is_int()) return get_item(v, attribute);
    Value cur = v;
    std::string path = attribute.to_str();
    size_t b = 0;
    while (true) {
        size_t e = path.find('.', b);
        std::string part = path.substr(b, e == std::string::npos ? std::string::npos : e - b);
        bool digits = !part.empty() && std::all_of(part.begin(), part.end(), [](char c) { return c >= '0' && c <= '9'; });
        cur = get_item(cur, digits ? Value(int64_t(std::stoll(part))) : Value(part));
        if (cur.is_undefined()) {
            if (!dflt.is_undefined()) return dflt;
            return cur;
        }
        if (e == std::string::npos) return cur;
        b = e + 1;
    }
}

// case_sensitive=False lowers strings before comparing (jinja2's ignore_case).
Value sort_key(const Value& v, bool case_sensitive) {
    if (!case_sensitive && v.is_string()) return Value(py_lower(v.str()));
    return v;
}

Value f_default(Interp&, const Value& v, Args& a) {
    Value d = arg(a, 0, "default_value", Value(""));
    bool boolean = arg(a, 1, "boolean", Value(false)).truthy();
    if (v.is_undefined() || (boolean && !v.truthy())) return d;
    return v;
}

Value f_length(Interp&, const Value& v, Args&) {
    switch (v.kind()) {
        case Value::Kind::Undefined: return Value(0);
        case Value::Kind::String: return Value(int64_t(cp_length(v.str())));
        case Value::Kind::List:
            if (v.is_generator()) fail("object of type 'generator' has no len()");
            return Value(int64_t(v.items().size()));
        case Value::Kind::Dict: return Value(int64_t(v.entries().size()));
        default: fail("object of type '" + v.type_name() + "' has no len()");
    }
}

Value f_trim(Interp&, const Value& v, Args& a) {
    return Value(py_strip(soft_str(v), true, true, arg(a, 0, "chars", Value(nullptr))));
}

Value f_join(Interp& in, const Value& v, Args& a) {
    std::string d = arg(a, 0, "d", Value("")).to_str();
    Value attribute = arg(a, 1, "attribute", Value(nullptr));
    std::string out;
    bool first = true;
    for (Value x : iterate(v)) {
        if (!attribute.is_none()) x = attr_path(x, attribute);
        if (!first) out += d;
        first = false;
        out += soft_str(x);
        if (out.size() > in.opt().max_output) fail("string longer than " + std::to_string(in.opt().max_output) + " bytes");
    }
    return Value(out);
}

Value f_tojson(Interp&, const Value& v, Args& a) {
    // HF: json.dumps(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False)
    JsonFormat f;
    Value ind = arg(a, 1, "indent", Value(nullptr));
    if (!ind.is_none()) {
        if (ind.is_string()) fail("tojson: a string indent is not supported");
        f.indent = int(std::max<int64_t>(0, checked_int(ind, "indent")));
    }
    Value seps = arg(a, 2, "separators", Value(nullptr));
    if (!seps.is_none()) {
        if (!seps.is_list() || seps.items().size() != 2) fail("separators must be a pair of strings");
        f.item_sep = seps.items()[0].to_str();
        f.key_sep = seps.items()[1].to_str();
    }
    f.sort_keys = arg(a, 3, "sort_keys", Value(false)).truthy();
    std::string out = to_json(v, f);
    if (arg(a, 0, "ensure_ascii", Value(false)).truthy()) {
        std::string esc;
        auto cps = code_points(out);
        for (auto c : cps) {
            if (c.size() == 1) {
                esc += c;
                continue;
            }
            uint32_t cp = uint8_t(c[0]) & (c.size() == 2 ? 0x1F : c.size() == 3 ? 0x0F : 0x07);
            for (size_t k = 1; k < c.size(); ++k) cp = (cp << 6) | (uint8_t(c[k]) & 0x3F);
            char b[16];
            if (cp >= 0x10000) {
                cp -= 0x10000;
                std::snprintf(b, sizeof b, "\\u%04x\\u%04x", 0xD800 + (cp >> 10), 0xDC00 + (cp & 0x3FF));
            } else {
                std::snprintf(b, sizeof b, "\\u%04x", cp);
            }
            esc += b;
        }
        out = esc;
    }
    return Value(out);
}

Value f_string(Interp&, const Value& v, Args&) { return v.is_markup() ? v : Value(soft_str(v)); }
Value f_upper(Interp&, const Value& v, Args&) { return Value(py_upper(soft_str(v))); }
Value f_lower(Interp&, const Value& v, Args&) { return Value(py_lower(soft_str(v))); }
Value f_safe(Interp&, const Value& v, Args&) { return Value::markup(soft_str(v)); }
Value f_escape(Interp&, const Value& v, Args&) {
    if (v.is_markup()) return v;
    return Value::markup(html_escape(soft_str(v)));
}

Value f_capitalize(Interp&, const Value& v, Args&) {
    std::string s = soft_str(v);  // code_points views into it
    auto cps = code_points(s);
    std::string out;
    for (size_t i = 0; i < cps.size(); ++i) out += i == 0 ? py_upper(cps[i]) : py_lower(cps[i]);
    return Value(out);
}

// jinja2's title: words start after runs of `-`, whitespace, `(`, `{`, `[`, `<`.
Value f_title(Interp&, const Value& v, Args&) {
    std::string out;
    bool word_start = true;
    std::string s = soft_str(v);
    for (auto c : code_points(s)) {
        bool sep = c == "-" || c == "(" || c == "{" || c == "[" || c == "<" ||
                   (c.size() == 1 ? is_py_space(uint8_t(c[0])) : c == "\xc2\xa0" || c == "\xe3\x80\x80");
        if (sep) {
            out += c;
            word_start = true;
        } else {
            out += word_start ? py_upper(c) : py_lower(c);
            word_start = false;
        }
    }
    return Value(out);
}

Value f_replace(Interp&, const Value& v, Args& a) {
    Value count = arg(a, 2, "count", Value(nullptr));
    std::string s = soft_str(v), from = soft_str(arg(a, 0, "old")), to = soft_str(arg(a, 1, "new"));
    Value r = get_attr(Value(s), "replace");
    Args ra;
    ra.pos = {Value(from), Value(to), count.is_none() ? Value(-1) : count};
    return r.call(ra);
}

Value f_items(Interp&, const Value& v, Args&) {
    if (v.is_undefined()) return Value::list({});
    if (!v.is_dict()) fail("Can only get item pairs from a mapping.");
    Value::List out;
    for (const auto& [k, x] : v.entries()) out.push_back(Value::list({k, x}, true));
    return Value::list(std::move(out));
}

Value f_list(Interp&, const Value& v, Args&) { return Value::list(iterate(v)); }

Value f_first(Interp&, const Value& v, Args&) {
    auto items = iterate(v);
    if (items.empty()) return Value::undefined("No first item, sequence was empty.");
    return items.front();
}

Value f_last(Interp&, const Value& v, Args&) {
    if (v.is_undefined()) return Value::undefined("No last item, sequence was empty.");
    auto items = iterate(v);
    if (items.empty()) return Value::undefined("No last item, sequence was empty.");
    return items.back();
}

Value f_reverse(Interp&, const Value& v, Args&) {
    if (v.is_string()) {
        auto cps = code_points(v.str());
        std::string out;
        for (size_t i = cps.size(); i-- > 0;) out += cps[i];
        return Value(out);
    }
    // Python's reversed(): an iterator, not a list.
    auto items = iterate(v);
    std::reverse(items.begin(), items.end());
    return Value::generator(std::move(items));
}

// Python's str.splitlines for the line breaks templates contain.
std::vector<std::string> splitlines(const std::string& s) {
    std::vector<std::string> out;
    size_t b = 0;
    for (size_t i = 0; i < s.size(); ++i) {
        if (s[i] == '\n' || s[i] == '\r' || s[i] == '\v' || s[i] == '\f' || (s[i] >= '\x1c' && s[i] <= '\x1e')) {
            out.push_back(s.substr(b, i - b));
            if (s[i] == '\r' && i + 1 < s.size() && s[i + 1] == '\n') ++i;
            b = i + 1;
        }
    }
    if (b < s.size()) out.push_back(s.substr(b));
    return out;
}

Value f_indent(Interp&, const Value& v, Args& a) {
    Value width = arg(a, 0, "width", Value(4));
    bool first = arg(a, 1, "first", Value(false)).truthy();
    bool blank = arg(a, 2, "blank", Value(false)).truthy();
    std::string ind = width.is_string() ? width.str() : std::string(size_t(std::max<int64_t>(0, checked_int(width, "indent"))), ' ');
    std::string s = soft_str(v) + "\n";
    std::vector<std::string> lines = splitlines(s);
    std::string rv;
    if (blank) {
        for (size_t i = 0; i < lines.size(); ++i) rv += (i ? "\n" + ind : "") + lines[i];
    } else {
        rv = lines.empty() ? "" : lines[0];
        for (size_t i = 1; i < lines.size(); ++i) rv += "\n" + (lines[i].empty() ? "" : ind + lines[i]);
    }
    if (first) rv = ind + rv;
    return Value(rv);
}

Value f_int(Interp&, const Value& v, Args& a) {
    Value dflt = arg(a, 0, "default", Value(0));
    int64_t base = checked_int(arg(a, 1, "base", Value(10)), "int");
    if (v.is_undefined()) fail(v.str());
    if (v.is_int() || v.is_bool()) return Value(v.as_int());
    if (v.is_float()) {
        if (!std::isfinite(v.as_float())) fail("cannot convert float infinity or NaN to integer");
        return Value(int64_t(v.as_float()));
    }
    if (v.is_string()) {
        std::string s = py_strip(v.str(), true, true, Value(nullptr));
        std::string t;
        for (size_t i = 0; i < s.size(); ++i)
            if (s[i] != '_' || (i > 0 && i + 1 < s.size())) t += s[i];
        if (!t.empty()) {
            errno = 0;
            char* end = nullptr;
            long long x = std::strtoll(t.c_str(), &end, int(base));
            if (end && *end == 0 && errno == 0 && t.find_first_of(" \t") == std::string::npos) return Value(int64_t(x));
            double d = std::strtod(t.c_str(), &end);
            if (end && *end == 0 && std::isfinite(d) && t.find_first_of("xX") == std::string::npos) return Value(int64_t(d));
        }
    }
    return dflt;
}

Value f_float(Interp&, const Value& v, Args& a) {
    Value dflt = arg(a, 0, "default", Value(0.0));
    if (v.is_undefined()) fail(v.str());
    if (v.is_number()) return Value(v.as_float());
    if (v.is_string()) {
        std::string s = py_strip(v.str(), true, true, Value(nullptr));
        char* end = nullptr;
        double d = std::strtod(s.c_str(), &end);
        if (!s.empty() && end && *end == 0 && s.find_first_of("xX") == std::string::npos) return Value(d);
    }
    return dflt;
}

Value f_abs(Interp&, const Value& v, Args&) {
    if (v.is_float()) return Value(std::fabs(v.as_float()));
    if (v.is_int() || v.is_bool()) {
        if (v.as_int() == INT64_MIN) fail("integer overflow");
        return Value(v.as_int() < 0 ? -v.as_int() : v.as_int());
    }
    if (v.is_undefined()) fail(v.str());
    fail("bad operand type for abs(): '" + v.type_name() + "'");
}

Value f_round(Interp&, const Value& v, Args& a) {
    int64_t prec = checked_int(arg(a, 0, "precision", Value(0)), "round");
    std::string method = arg(a, 1, "method", Value("common")).to_str();
    if (v.is_undefined()) fail(v.str());
    if (!v.is_number()) fail("type " + v.type_name() + " doesn't define __round__ method");
    if (method == "common") {
        if (!v.is_float()) return Value(v.as_int());
        // Python rounds the exact binary value half-to-even; printf does the same.
        if (prec < 0 || prec > 300) fail("round: unsupported precision");
        char buf[400];
        std::snprintf(buf, sizeof buf, "%.*f", int(prec), v.as_float());
        return Value(std::strtod(buf, nullptr));
    }
    double p = std::pow(10.0, double(prec));
    if (method == "ceil") return Value(std::ceil(v.as_float() * p) / p);
    if (method == "floor") return Value(std::floor(v.as_float() * p) / p);
    fail("method must be common, ceil or floor");
}

Value f_unique(Interp&, const Value& v, Args& a) {
    bool cs = arg(a, 0, "case_sensitive", Value(false)).truthy();
    Value attribute = arg(a, 1, "attribute", Value(nullptr));
    Value::List out, seen;
    for (const Value& x : iterate(v)) {
        Value key = sort_key(attribute.is_none() ? x : attr_path(x, attribute), cs);
        bool dup = false;
        for (const Value& s : seen)
            if (equals(s, key)) dup = true;
        if (dup) continue;
        seen.push_back(key);
        out.push_back(x);
    }
    return Value::list(std::move(out));
}

Value f_sort(Interp&, const Value& v, Args& a) {
    bool reverse = arg(a, 0, "reverse", Value(false)).truthy();
    bool cs = arg(a, 1, "case_sensitive", Value(false)).truthy();
    Value attribute = arg(a, 2, "attribute", Value(nullptr));
    auto items = iterate(v);
    std::vector<std::pair<Value, Value>> keyed;
    for (const Value& x : items) keyed.emplace_back(sort_key(attribute.is_none() ? x : attr_path(x, attribute), cs), x);
    // Python's sorted(reverse=True) keeps equal items in their original order.
    std::stable_sort(keyed.begin(), keyed.end(), [&](const auto& p, const auto& q) {
        return reverse ? less(q.first, p.first) : less(p.first, q.first);
    });
    Value::List out;
    for (auto& [k, x] : keyed) out.push_back(x);
    return Value::list(std::move(out));
}

Value f_dictsort(Interp&, const Value& v, Args& a) {
    bool cs = arg(a, 0, "case_sensitive", Value(false)).truthy();
    std::string by = arg(a, 1, "by", Value("key")).to_str();
    bool reverse = arg(a, 2, "reverse", Value(false)).truthy();
    if (!v.is_dict()) fail("dictsort: expected a mapping");
    if (by != "key" && by != "value") fail("You can only sort by either \"key\" or \"value\"");
    std::vector<std::pair<Value, Value>> items(v.entries().begin(), v.entries().end());
    std::stable_sort(items.begin(), items.end(), [&](const auto& p, const auto& q) {
        Value x = sort_key(by == "key" ? p.first : p.second, cs), y = sort_key(by == "key" ? q.first : q.second, cs);
        return reverse ? less(y, x) : less(x, y);
    });
    Value::List out;
    for (auto& [k, x] : items) out.push_back(Value::list({k, x}, true));
    return Value::list(std::move(out));
}

Value minmax(const Value& v, Args& a, bool want_max) {
    bool cs = arg(a, 0, "case_sensitive", Value(false)).truthy();
    Value attribute = arg(a, 1, "attribute", Value(nullptr));
    auto items = iterate(v);
    if (items.empty()) return Value::undefined("No aggregated item, sequence was empty.");
    size_t best = 0;
    auto key = [&](size_t i) { return sort_key(attribute.is_none() ? items[i] : attr_path(items[i], attribute), cs); };
    for (size_t i = 1; i < items.size(); ++i) {
        if (want_max ? less(key(best), key(i)) : less(key(i), key(best))) best = i;
    }
    return items[best];
}
Value f_min(Interp&, const Value& v, Args& a) { return minmax(v, a, false); }
Value f_max(Interp&, const Value& v, Args& a) { return minmax(v, a, true); }

Value f_sum(Interp& in, const Value& v, Args& a) {
    Value attribute = arg(a, 0, "attribute", Value(nullptr));
    Value total = arg(a, 1, "start", Value(0));
    for (const Value& x : iterate(v)) {
        Value y = attribute.is_none() ? x : attr_path(x, attribute);
        if (!total.is_number() || !y.is_number()) fail("unsupported operand type(s) for +: '" + total.type_name() + "' and '" + y.type_name() + "'");
        if (total.is_float() || y.is_float()) total = Value(total.as_float() + y.as_float());
        else {
            int64_t r;
            if (__builtin_add_overflow(total.as_int(), y.as_int(), &r)) fail("integer overflow");
            total = Value(r);
        }
        in.spend(1);
    }
    return total;
}

// select/reject/selectattr/rejectattr: the test and its arguments follow the filter's own.
Value select_impl(Interp& in, const Value& v, Args& a, bool by_attr, bool want) {
    size_t i = 0;
    Value attribute;
    if (by_attr) {
        if (a.pos.empty()) fail("Missing parameter for attribute name");
        attribute = a.pos[i++];
    }
    std::string test;
    Args targs;
    if (i < a.pos.size()) {
        test = a.pos[i++].to_str();
        targs.pos.assign(a.pos.begin() + long(i), a.pos.end());
        targs.kw = a.kw;
    }
    Value::List out;
    if (!v.truthy()) return Value::generator({});  // jinja2: `if value:` before iterating
    for (const Value& x : iterate(v)) {
        in.spend(1);
        Value y = by_attr ? attr_path(x, attribute) : x;
        bool r = test.empty() ? y.truthy() : run_test(in, test, y, targs);
        if (r == want) out.push_back(x);
    }
    return Value::generator(std::move(out));
}
Value f_select(Interp& in, const Value& v, Args& a) { return select_impl(in, v, a, false, true); }
Value f_reject(Interp& in, const Value& v, Args& a) { return select_impl(in, v, a, false, false); }
Value f_selectattr(Interp& in, const Value& v, Args& a) { return select_impl(in, v, a, true, true); }
Value f_rejectattr(Interp& in, const Value& v, Args& a) { return select_impl(in, v, a, true, false); }

Value f_map(Interp& in, const Value& v, Args& a) {
    Value::List out;
    if (!v.truthy()) return Value::generator({});
    bool by_attr = a.pos.empty();
    for (auto& [k, x] : a.kw)
        if (k != "attribute" && k != "default") by_attr = false;
    if (by_attr) {
        Value attribute = arg(a, 99, "attribute");
        if (attribute.is_undefined()) fail("map: an attribute or a filter name is required");
        Value dflt = arg(a, 99, "default");
        for (const Value& x : iterate(v)) out.push_back(attr_path(x, attribute, dflt));
        return Value::generator(std::move(out));
    }
    if (a.pos.empty()) fail("map requires a filter argument");
    std::string name = a.pos[0].to_str();
    Args fargs;
    fargs.pos.assign(a.pos.begin() + 1, a.pos.end());
    fargs.kw = a.kw;
    for (const Value& x : iterate(v)) {
        in.spend(1);
        Args copy = fargs;
        out.push_back(run_filter(in, name, x, copy));
    }
    return Value::generator(std::move(out));
}

Value f_attr(Interp&, const Value& v, Args& a) { return get_attr(v, arg(a, 0, "name").to_str(), false); }

Value f_wordcount(Interp&, const Value& v, Args&) {
    int64_t n = 0;
    bool in_word = false;
    std::string s = soft_str(v);
    for (auto c : code_points(s)) {
        bool w = c.size() > 1 || std::isalnum(uint8_t(c[0])) || c[0] == '_';
        if (w && !in_word) ++n;
        in_word = w;
    }
    return Value(n);
}

Value f_center(Interp&, const Value& v, Args& a) {
    std::string s = soft_str(v);
    int64_t width = checked_int(arg(a, 0, "width", Value(80)), "center");
    int64_t n = int64_t(cp_length(s));
    if (width <= n) return Value(s);
    if (width > 1 << 20) fail("center: width too large");
    // Python's str.center puts the extra space on the right unless the width is odd and...:
    // left = pad // 2 + (pad & width & 1)
    int64_t pad = width - n;
    int64_t left = pad / 2 + (pad & width & 1);
    return Value(std::string(size_t(left), ' ') + s + std::string(size_t(pad - left), ' '));
}

Value f_batch(Interp&, const Value& v, Args& a) {
    int64_t n = checked_int(arg(a, 0, "linecount"), "batch");
    if (n <= 0) fail("batch: linecount must be positive");
    Value fill = arg(a, 1, "fill_with", Value(nullptr));
    Value::List out, cur;
    for (const Value& x : iterate(v)) {
        if (int64_t(cur.size()) == n) {
            out.push_back(Value::list(std::move(cur)));
            cur.clear();
        }
        cur.push_back(x);
    }
    if (!cur.empty()) {
        if (!fill.is_none())
            while (int64_t(cur.size()) < n) cur.push_back(fill);
        out.push_back(Value::list(std::move(cur)));
    }
    return Value::list(std::move(out));
}

// Python's `%` formatting for %s, %r, %d, %i, %f (with precision), %%.
Value f_format(Interp&, const Value& v, Args& a) {
    std::string fmt = soft_str(v), out;
    size_t k = 0;
    for (size_t i = 0; i < fmt.size(); ++i) {
        if (fmt[i] != '%') {
            out += fmt[i];
            continue;
        }
        if (++i >= fmt.size()) fail("incomplete format");
        std::string spec;
        while (i < fmt.size() && std::strchr("0123456789.-+ #", fmt[i])) spec += fmt[i++];
        if (i >= fmt.size()) fail("incomplete format");
        char c = fmt[i];
        if (c == '%') {
            out += '%';
            continue;
        }
        if (k >= a.pos.size()) fail("not enough arguments for format string");
        const Value& x = a.pos[k++];
        char buf[512];
        if (c == 's' || c == 'r') {
            // Width and precision count code points, as Python's do.
            std::string t = c == 's' ? x.to_str() : x.repr();
            bool left = spec.find('-') != std::string::npos;
            size_t dot = spec.find('.');
            std::string digits = spec.substr(0, dot);
            digits.erase(std::remove_if(digits.begin(), digits.end(), [](char ch) { return ch < '0' || ch > '9'; }), digits.end());
            if (dot != std::string::npos) {
                auto cps = code_points(t);
                size_t prec = size_t(std::atoi(spec.c_str() + dot + 1));
                if (prec < cps.size()) t = std::string(cps[0].data(), size_t(cps[prec].data() - cps[0].data()));
            }
            size_t width = digits.empty() ? 0 : size_t(std::min(std::atoi(digits.c_str()), 1 << 20));
            size_t n = cp_length(t);
            if (n < width) t = left ? t + std::string(width - n, ' ') : std::string(width - n, ' ') + t;
            out += t;
        }
        else if (c == 'd' || c == 'i') {
            std::snprintf(buf, sizeof buf, ("%" + spec + "lld").c_str(), (long long)(x.is_float() ? int64_t(x.as_float()) : checked_int(x, "format")));
            out += buf;
        } else if (c == 'f' || c == 'e' || c == 'g' || c == 'x' || c == 'X') {
            if (c == 'x' || c == 'X') std::snprintf(buf, sizeof buf, ("%" + spec + "ll" + c).c_str(), (long long)checked_int(x, "format"));
            else std::snprintf(buf, sizeof buf, ("%" + spec + c).c_str(), x.as_float());
            out += buf;
        } else {
            fail(std::string("unsupported format character '") + c + "'");
        }
    }
    return Value(out);
}

Value f_truncate(Interp&, const Value& v, Args& a) {
    std::string s = soft_str(v);
    int64_t length = checked_int(arg(a, 0, "length", Value(255)), "truncate");
    bool killwords = arg(a, 1, "killwords", Value(false)).truthy();
    std::string end = arg(a, 2, "end", Value("...")).to_str();
    int64_t leeway = checked_int(arg(a, 3, "leeway", Value(5)), "truncate");
    auto cps = code_points(s);
    int64_t n = int64_t(cps.size()), endn = int64_t(cp_length(end));
    if (n <= length + leeway) return Value(s);
    int64_t keep = std::max<int64_t>(0, length - endn);
    std::string head;
    for (int64_t i = 0; i < keep; ++i) head += cps[size_t(i)];
    if (killwords) return Value(head + end);
    size_t sp = head.rfind(' ');
    if (sp != std::string::npos) head = head.substr(0, sp);
    return Value(head + end);
}

const std::map<std::string, Fn, std::less<>>& table() {
    static const std::map<std::string, Fn, std::less<>> t = {
        {"abs", f_abs},
        {"attr", f_attr},
        {"batch", f_batch},
        {"capitalize", f_capitalize},
        {"center", f_center},
        {"count", f_length},
        {"d", f_default},
        {"default", f_default},
        {"dictsort", f_dictsort},
        {"e", f_escape},
        {"escape", f_escape},
        {"first", f_first},
        {"float", f_float},
        {"forceescape", f_escape},
        {"format", f_format},
        {"indent", f_indent},
        {"int", f_int},
        {"items", f_items},
        {"join", f_join},
        {"last", f_last},
        {"length", f_length},
        {"list", f_list},
        {"lower", f_lower},
        {"map", f_map},
        {"max", f_max},
        {"min", f_min},
        {"reject", f_reject},
        {"rejectattr", f_rejectattr},
        {"replace", f_replace},
        {"reverse", f_reverse},
        {"round", f_round},
        {"safe", f_safe},
        {"select", f_select},
        {"selectattr", f_selectattr},
        {"sort", f_sort},
        {"string", f_string},
        {"sum", f_sum},
        {"title", f_title},
        {"tojson", f_tojson},
        {"trim", f_trim},
        {"truncate", f_truncate},
        {"unique", f_unique},
        {"upper", f_upper},
        {"wordcount", f_wordcount},
    };
    return t;
}

}  // namespace

FilterFn find_filter(std::string_view name) {
    auto it = table().find(name);
    return it == table().end() ? nullptr : it->second;
}

Value run_filter(Interp& in, std::string_view name, const Value& v, Args& a) {
    FilterFn f = find_filter(name);
    if (!f) fail("No filter named '" + std::string(name) + "'.");
    Value r = f(in, v, a);
    if (r.str_size() > in.opt().max_output) fail("string longer than " + std::to_string(in.opt().max_output) + " bytes");
    return r;
}

}  // namespace ls::jinja
