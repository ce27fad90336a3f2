// The values a template computes with, modelled on the Python objects jinja2 hands around:
// printing, truthiness, equality and ordering follow Python, because the oracle is Python.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace ls::jinja {

class Value;

// Positional and keyword arguments of a call, in the order written.
struct Args {
    std::vector<Value> pos;
    std::vector<std::pair<std::string, Value>> kw;
};

using Function = std::function<Value(Args&)>;

class Value {
 public:
    enum class Kind : uint8_t { Undefined, None, Bool, Int, Float, String, List, Dict, Callable, Namespace };
    using List = std::vector<Value>;
    // Keys are Values (Python allows any hashable); dicts in templates are small, so a scan.
    using Dict = std::vector<std::pair<Value, Value>>;

    Value() = default;  // undefined
    Value(std::nullptr_t) : kind_(Kind::None) {}
    Value(bool b) : kind_(Kind::Bool), i_(b) {}
    Value(int i) : kind_(Kind::Int), i_(i) {}
    Value(int64_t i) : kind_(Kind::Int), i_(i) {}
    Value(double f) : kind_(Kind::Float), f_(f) {}
    // Strings are shared, not copied: templates pass message contents around a lot, and a
    // hostile one must not multiply a large string by copying it into a long list.
    Value(std::string s) : kind_(Kind::String), s_(std::make_shared<const std::string>(std::move(s))) {}
    Value(std::string_view s) : Value(std::string(s)) {}
    Value(const char* s) : Value(std::string(s)) {}

    // Lists, tuples and dicts carry their nesting depth, refused past kMaxDepth so that
    // printing, comparing and destroying them cannot exhaust the stack.
    static constexpr int kMaxDepth = 400;
    static Value list(List items, bool tuple = false);
    // What jinja2's select/reject/map return: a Python generator, iterable but without a
    // length, always true, and not JSON serializable.
    static Value generator(List items);
    static Value dict(Dict items);
    static Value namespace_(Dict items);
    static Value function(std::string name, Function fn);
    // An undefined value remembers why it is undefined, for the error raised when it is used.
    static Value undefined(std::string why, bool unsafe = false);
    // A string marked safe (jinja2's Markup, from `|safe` or `|escape`): `+` with a plain
    // string HTML-escapes the plain one, even with autoescape off.
    static Value markup(std::string s);

    Kind kind() const { return kind_; }
    bool is_undefined() const { return kind_ == Kind::Undefined; }
    bool is_none() const { return kind_ == Kind::None; }
    bool is_bool() const { return kind_ == Kind::Bool; }
    bool is_int() const { return kind_ == Kind::Int; }
    bool is_float() const { return kind_ == Kind::Float; }
    bool is_number() const { return kind_ == Kind::Int || kind_ == Kind::Float || kind_ == Kind::Bool; }
    bool is_string() const { return kind_ == Kind::String; }
    bool is_list() const { return kind_ == Kind::List && !gen_; }
    bool is_generator() const { return kind_ == Kind::List && gen_; }
    bool is_tuple() const { return kind_ == Kind::List && tuple_; }
    bool is_dict() const { return kind_ == Kind::Dict; }
    bool is_callable() const { return kind_ == Kind::Callable; }
    bool is_namespace() const { return kind_ == Kind::Namespace; }
    bool unsafe() const { return kind_ == Kind::Undefined && tuple_; }
    bool is_markup() const { return kind_ == Kind::String && tuple_; }

    size_t str_size() const { return s_ ? s_->size() : 0; }
    bool as_bool() const { return i_ != 0; }
    int64_t as_int() const { return kind_ == Kind::Float ? int64_t(f_) : i_; }
    double as_float() const { return kind_ == Kind::Float ? f_ : double(i_); }
    // A string's bytes, or an undefined's reason.
    const std::string& str() const { return s_ ? *s_ : empty_string(); }
    const List& items() const { return *list_; }
    const Dict& entries() const { return *dict_; }
    Dict& mutable_entries() const { return *dict_; }  // namespaces only: `set ns.x`
    const std::string& fn_name() const { return fn_->name; }
    Value call(Args& a) const { return fn_->fn(a); }
    int depth() const { return depth_; }
    bool same_object(const Value& o) const;

    // Dict (or namespace) lookup; nullptr when absent.
    const Value* find(const Value& key) const;
    const Value* find(std::string_view key) const;

    bool truthy() const;
    std::string to_str() const;   // Python str()
    std::string repr() const;     // Python repr()
    std::string type_name() const;  // Python's type name: 'int', 'str', 'dict', ...

 private:
    struct Fn {
        std::string name;
        Function fn;
    };
    Kind kind_ = Kind::Undefined;
    bool gen_ = false;
    bool tuple_ = false;  // a tuple (list), an unsafe attribute (undefined), or Markup (string)
    int depth_ = 0;
    int64_t i_ = 0;
    double f_ = 0;
    std::shared_ptr<const std::string> s_;
    static const std::string& empty_string();
    std::shared_ptr<List> list_;
    std::shared_ptr<Dict> dict_;
    std::shared_ptr<Fn> fn_;
};

Value from_json(const nlohmann::ordered_json& j);

// Python semantics: 1 == 1.0 == True, [1] != (1,), dicts equal regardless of order.
bool equals(const Value& a, const Value& b);
// Python's `<`; throws Fail (TypeError) between types Python cannot order.
bool less(const Value& a, const Value& b);

// json.dumps(x, ensure_ascii=False, indent=indent, separators=..., sort_keys=...) exactly.
struct JsonFormat {
    int indent = -1;  // -1: None
    std::string item_sep, key_sep;  // empty: json.dumps' defaults for the indent
    bool sort_keys = false;
};
std::string to_json(const Value& v, const JsonFormat& f);

// Python float repr: the shortest text that reads back to the same double.
std::string float_repr(double d);

}  // namespace ls::jinja
