#include "core/jinja/value.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>

#include "core/jinja/internal.h"

namespace ls::jinja {

void fail(std::string msg) { throw Fail{std::move(msg)}; }

namespace {

int child_depth(const Value& v) { return v.kind() == Value::Kind::List || v.is_dict() || v.is_namespace() ? v.depth() : 0; }

// Printing and comparing recurse over nested values; the depth cap on construction bounds it,
// and this guard stops a namespace that holds itself.
struct DepthGuard {
    static inline thread_local int depth = 0;
    DepthGuard() {
        if (++depth > Value::kMaxDepth + 8) {
            --depth;
            fail("value nested too deeply (a namespace holding itself?)");
        }
    }
    ~DepthGuard() { --depth; }
};

}  // namespace

Value Value::list(List items, bool tuple) {
    Value v;
    v.kind_ = Kind::List;
    v.tuple_ = tuple;
    int d = 0;
    for (const Value& x : items) d = std::max(d, child_depth(x));
    if (d + 1 > kMaxDepth) fail("value nested deeper than " + std::to_string(kMaxDepth) + " levels");
    v.depth_ = d + 1;
    v.list_ = std::make_shared<List>(std::move(items));
    return v;
}

Value Value::generator(List items) {
    Value v = list(std::move(items));
    v.gen_ = true;
    return v;
}

Value Value::dict(Dict items) {
    Value v;
    v.kind_ = Kind::Dict;
    int d = 0;
    for (const auto& [k, x] : items) d = std::max(d, child_depth(x));
    if (d + 1 > kMaxDepth) fail("value nested deeper than " + std::to_string(kMaxDepth) + " levels");
    v.depth_ = d + 1;
    v.dict_ = std::make_shared<Dict>(std::move(items));
    return v;
}

Value Value::namespace_(Dict items) {
    Value v = dict(std::move(items));
    v.kind_ = Kind::Namespace;
    return v;
}

Value Value::function(std::string name, Function fn) {
    Value v;
    v.kind_ = Kind::Callable;
    v.fn_ = std::make_shared<Fn>(Fn{std::move(name), std::move(fn)});
    return v;
}

Value Value::undefined(std::string why, bool unsafe) {
    Value v;
    v.s_ = std::make_shared<const std::string>(std::move(why));
    v.tuple_ = unsafe;
    return v;
}

const std::string& Value::empty_string() {
    static const std::string e;
    return e;
}

Value Value::markup(std::string s) {
    Value v(std::move(s));
    v.tuple_ = true;
    return v;
}

bool Value::same_object(const Value& o) const {
    if (kind_ != o.kind_) return false;
    switch (kind_) {
        case Kind::List: return list_ == o.list_;
        case Kind::Dict:
        case Kind::Namespace: return dict_ == o.dict_;
        case Kind::Callable: return fn_ == o.fn_;
        default: return equals(*this, o);
    }
}

const Value* Value::find(const Value& key) const {
    if (!dict_) return nullptr;
    for (const auto& [k, v] : *dict_)
        if (equals(k, key)) return &v;
    return nullptr;
}

const Value* Value::find(std::string_view key) const {
    if (!dict_) return nullptr;
    for (const auto& [k, v] : *dict_)
        if (k.is_string() && k.str() == key) return &v;
    return nullptr;
}

bool Value::truthy() const {
    switch (kind_) {
        case Kind::Undefined:
        case Kind::None: return false;
        case Kind::Bool:
        case Kind::Int: return i_ != 0;
        case Kind::Float: return f_ != 0;
        case Kind::String: return !str().empty();
        case Kind::List: return gen_ || !list_->empty();
        case Kind::Dict: return !dict_->empty();
        default: return true;
    }
}

std::string float_repr(double d) {
    if (std::isnan(d)) return "nan";
    if (std::isinf(d)) return d < 0 ? "-inf" : "inf";
    if (d == 0) return std::signbit(d) ? "-0.0" : "0.0";
    // The shortest round-trip digits, then Python's layout: positional for exponents in
    // [-4, 16), else d.ddde+XX.
    char buf[64];
    auto r = std::to_chars(buf, buf + sizeof buf, d, std::chars_format::scientific);
    std::string sci(buf, r.ptr);
    bool neg = sci[0] == '-';
    if (neg) sci.erase(0, 1);
    size_t e = sci.find('e');
    int exp = std::stoi(sci.substr(e + 1));
    std::string digits;
    for (char c : sci.substr(0, e))
        if (c != '.') digits += c;
    std::string out;
    if (exp >= -5 && exp < 16) {
        if (exp < 0) {
            out = "0." + std::string(size_t(-exp - 1), '0') + digits;
        } else if (size_t(exp) + 1 >= digits.size()) {
            out = digits + std::string(size_t(exp) + 1 - digits.size(), '0') + ".0";
        } else {
            out = digits.substr(0, size_t(exp) + 1) + "." + digits.substr(size_t(exp) + 1);
        }
        // Python switches to exponent form below 1e-4.
        if (exp < -4) out.clear();
    }
    if (out.empty()) {
        out = digits.substr(0, 1);
        if (digits.size() > 1) out += "." + digits.substr(1);
        char eb[16];
        std::snprintf(eb, sizeof eb, "e%c%02d", exp < 0 ? '-' : '+', exp < 0 ? -exp : exp);
        out += eb;
    }
    return neg ? "-" + out : out;
}

namespace {

std::string str_repr(const std::string& s) {
    bool has_sq = s.find('\'') != std::string::npos, has_dq = s.find('"') != std::string::npos;
    char q = has_sq && !has_dq ? '"' : '\'';
    std::string out(1, q);
    for (unsigned char c : s) {
        if (c == q || c == '\\') {
            out += '\\';
            out += char(c);
        } else if (c == '\n') {
            out += "\\n";
        } else if (c == '\r') {
            out += "\\r";
        } else if (c == '\t') {
            out += "\\t";
        } else if (c < 0x20 || c == 0x7f) {
            char b[8];
            std::snprintf(b, sizeof b, "\\x%02x", c);
            out += b;
        } else {
            out += char(c);
        }
    }
    out += q;
    return out;
}

}  // namespace

std::string Value::repr() const {
    switch (kind_) {
        case Kind::String: return str_repr(str());
        case Kind::Undefined: return "Undefined";
        default: return to_str();
    }
}

std::string Value::to_str() const {
    switch (kind_) {
        case Kind::Undefined: return "";
        case Kind::None: return "None";
        case Kind::Bool: return i_ ? "True" : "False";
        case Kind::Int: return std::to_string(i_);
        case Kind::Float: return float_repr(f_);
        case Kind::String: return str();
        case Kind::List: {
            if (gen_) return "<generator object>";
            DepthGuard g;
            std::string out = tuple_ ? "(" : "[";
            for (size_t i = 0; i < list_->size(); ++i) {
                if (i) out += ", ";
                out += (*list_)[i].repr();
            }
            if (tuple_ && list_->size() == 1) out += ",";
            return out + (tuple_ ? ")" : "]");
        }
        case Kind::Dict:
        case Kind::Namespace: {
            DepthGuard g;
            std::string out = kind_ == Kind::Namespace ? "<Namespace {" : "{";
            bool first = true;
            for (const auto& [k, v] : *dict_) {
                if (!first) out += ", ";
                first = false;
                out += k.repr() + ": " + v.repr();
            }
            return out + (kind_ == Kind::Namespace ? "}>" : "}");
        }
        case Kind::Callable: return "<function " + fn_->name + ">";
    }
    return "";
}

std::string Value::type_name() const {
    switch (kind_) {
        case Kind::Undefined: return "Undefined";
        case Kind::None: return "NoneType";
        case Kind::Bool: return "bool";
        case Kind::Int: return "int";
        case Kind::Float: return "float";
        case Kind::String: return "str";
        case Kind::List: return gen_ ? "generator" : tuple_ ? "tuple" : "list";
        case Kind::Dict: return "dict";
        case Kind::Callable: return "function";
        case Kind::Namespace: return "Namespace";
    }
    return "object";
}

Value from_json(const nlohmann::ordered_json& j) {
    using J = nlohmann::ordered_json;
    switch (j.type()) {
        case J::value_t::null: return Value(nullptr);
        case J::value_t::boolean: return Value(j.get<bool>());
        case J::value_t::number_integer: return Value(j.get<int64_t>());
        case J::value_t::number_unsigned: {
            uint64_t u = j.get<uint64_t>();
            if (u > uint64_t(INT64_MAX)) return Value(double(u));
            return Value(int64_t(u));
        }
        case J::value_t::number_float: return Value(j.get<double>());
        case J::value_t::string: return Value(j.get<std::string>());
        case J::value_t::array: {
            Value::List items;
            items.reserve(j.size());
            for (const auto& x : j) items.push_back(from_json(x));
            return Value::list(std::move(items));
        }
        case J::value_t::object: {
            Value::Dict items;
            items.reserve(j.size());
            for (auto it = j.begin(); it != j.end(); ++it) items.emplace_back(Value(it.key()), from_json(it.value()));
            return Value::dict(std::move(items));
        }
        default: return Value();
    }
}

bool equals(const Value& a, const Value& b) {
    using K = Value::Kind;
    if (a.is_number() && b.is_number()) {
        if (a.is_float() || b.is_float()) return a.as_float() == b.as_float();
        return a.as_int() == b.as_int();
    }
    if (a.kind() != b.kind()) return false;
    switch (a.kind()) {
        case K::Undefined:
        case K::None: return true;
        case K::String: return a.str() == b.str();
        case K::List: {
            if (a.is_generator() || b.is_generator()) return a.same_object(b);
            if (a.is_tuple() != b.is_tuple() || a.items().size() != b.items().size()) return false;
            DepthGuard g;
            for (size_t i = 0; i < a.items().size(); ++i)
                if (!equals(a.items()[i], b.items()[i])) return false;
            return true;
        }
        case K::Dict: {
            if (a.entries().size() != b.entries().size()) return false;
            DepthGuard g;
            for (const auto& [k, v] : a.entries()) {
                const Value* o = b.find(k);
                if (!o || !equals(v, *o)) return false;
            }
            return true;
        }
        default: return a.same_object(b);
    }
}

bool less(const Value& a, const Value& b) {
    if (a.is_number() && b.is_number()) {
        if (a.is_float() || b.is_float()) return a.as_float() < b.as_float();
        return a.as_int() < b.as_int();
    }
    if (a.is_string() && b.is_string()) return a.str() < b.str();  // UTF-8 keeps code point order
    if (a.is_list() && b.is_list() && a.is_tuple() == b.is_tuple()) {
        DepthGuard g;
        const auto &x = a.items(), &y = b.items();
        for (size_t i = 0; i < x.size() && i < y.size(); ++i) {
            if (!equals(x[i], y[i])) return less(x[i], y[i]);
        }
        return x.size() < y.size();
    }
    if (a.is_undefined() || b.is_undefined()) fail((a.is_undefined() ? a : b).str());
    fail("'<' not supported between instances of '" + a.type_name() + "' and '" + b.type_name() + "'");
}

namespace {

void json_string(std::string& out, const std::string& s) {
    out += '"';
    for (unsigned char c : s) {
        switch (c) {
            case '"': out += "\\\""; break;
            case '\\': out += "\\\\"; break;
            case '\n': out += "\\n"; break;
            case '\r': out += "\\r"; break;
            case '\t': out += "\\t"; break;
            case '\b': out += "\\b"; break;
            case '\f': out += "\\f"; break;
            default:
                if (c < 0x20) {
                    char b[8];
                    std::snprintf(b, sizeof b, "\\u%04x", c);
                    out += b;
                } else {
                    out += char(c);
                }
        }
    }
    out += '"';
}

std::string json_float(double d) {
    if (std::isnan(d)) return "NaN";
    if (std::isinf(d)) return d < 0 ? "-Infinity" : "Infinity";
    return float_repr(d);
}

// json.dumps turns keys into strings: str as is, numbers and constants as JSON would print them.
std::string json_key(const Value& k) {
    switch (k.kind()) {
        case Value::Kind::String: return k.str();
        case Value::Kind::Bool: return k.as_bool() ? "true" : "false";
        case Value::Kind::None: return "null";
        case Value::Kind::Int: return std::to_string(k.as_int());
        case Value::Kind::Float: return json_float(k.as_float());
        default: fail("keys must be str, int, float, bool or None, not " + k.type_name());
    }
}

void json_dump(std::string& out, const Value& v, const JsonFormat& f, int level) {
    const std::string& item_sep = f.item_sep;
    const std::string& key_sep = f.key_sep;
    auto newline = [&](int lvl) {
        if (f.indent < 0) return;
        out += '\n';
        out.append(size_t(f.indent) * size_t(lvl), ' ');
    };
    switch (v.kind()) {
        case Value::Kind::None: out += "null"; return;
        case Value::Kind::Bool: out += v.as_bool() ? "true" : "false"; return;
        case Value::Kind::Int: out += std::to_string(v.as_int()); return;
        case Value::Kind::Float: out += json_float(v.as_float()); return;
        case Value::Kind::String: json_string(out, v.str()); return;
        case Value::Kind::List: {
            if (v.is_generator()) fail("Object of type generator is not JSON serializable");
            DepthGuard g;
            if (v.items().empty()) {
                out += "[]";
                return;
            }
            out += '[';
            newline(level + 1);
            bool first = true;
            for (const Value& x : v.items()) {
                if (!first) {
                    out += item_sep;
                    newline(level + 1);
                }
                first = false;
                json_dump(out, x, f, level + 1);
            }
            newline(level);
            out += ']';
            return;
        }
        case Value::Kind::Dict: {
            DepthGuard g;
            if (v.entries().empty()) {
                out += "{}";
                return;
            }
            std::vector<std::pair<std::string, const Value*>> kv;
            for (const auto& [k, x] : v.entries()) kv.emplace_back(json_key(k), &x);
            if (f.sort_keys)
                std::stable_sort(kv.begin(), kv.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
            out += '{';
            newline(level + 1);
            bool first = true;
            for (const auto& [k, x] : kv) {
                if (!first) {
                    out += item_sep;
                    newline(level + 1);
                }
                first = false;
                json_string(out, k);
                out += key_sep;
                json_dump(out, *x, f, level + 1);
            }
            newline(level);
            out += '}';
            return;
        }
        default: fail("Object of type " + v.type_name() + " is not JSON serializable");
    }
}

}  // namespace

std::string to_json(const Value& v, const JsonFormat& f) {
    JsonFormat g = f;
    if (g.item_sep.empty() && g.key_sep.empty()) {
        g.item_sep = f.indent < 0 ? ", " : ",";
        g.key_sep = ": ";
    }
    std::string out;
    json_dump(out, v, g, 0);
    return out;
}

}  // namespace ls::jinja
