// jinja2's builtin tests (tests.py), answering as they do for the Python value each of ours
// stands for: e.g. an undefined value is iterable and a sequence, a bool is a number.
#include <map>

#include "core/jinja/interp.h"

namespace ls::jinja {

namespace {

Value first_arg(Args& a, const char* name) {
    Value v = arg(a, 0, name);
    if (!has_arg(a, 0, name)) fail(std::string("test is missing its argument '") + name + "'");
    return v;
}

bool t_defined(Interp&, const Value& v, Args&) { return !v.is_undefined(); }
bool t_undefined(Interp&, const Value& v, Args&) { return v.is_undefined(); }
bool t_none(Interp&, const Value& v, Args&) { return v.is_none(); }
bool t_boolean(Interp&, const Value& v, Args&) { return v.is_bool(); }
bool t_true(Interp&, const Value& v, Args&) { return v.is_bool() && v.as_bool(); }
bool t_false(Interp&, const Value& v, Args&) { return v.is_bool() && !v.as_bool(); }
bool t_integer(Interp&, const Value& v, Args&) { return v.is_int(); }
bool t_float(Interp&, const Value& v, Args&) { return v.is_float(); }
bool t_number(Interp&, const Value& v, Args&) { return v.is_number(); }
bool t_string(Interp&, const Value& v, Args&) { return v.is_string(); }
bool t_mapping(Interp&, const Value& v, Args&) { return v.is_dict(); }
bool t_iterable(Interp&, const Value& v, Args&) { return v.is_undefined() || v.is_string() || v.kind() == Value::Kind::List || v.is_dict(); }
bool t_sequence(Interp&, const Value& v, Args&) { return v.is_undefined() || v.is_string() || v.is_list() || v.is_dict(); }
// Undefined has __call__ (it raises), so Python's callable() says yes.
bool t_callable(Interp&, const Value& v, Args&) { return v.is_callable() || v.is_undefined(); }
bool t_escaped(Interp&, const Value& v, Args&) { return v.is_markup(); }

int64_t int_of(const Value& v, const char* what) {
    if (v.is_float()) {
        double d = v.as_float();
        if (d != double(int64_t(d))) fail(std::string(what) + ": not an integer");
        return int64_t(d);
    }
    return checked_int(v, what);
}
bool t_odd(Interp&, const Value& v, Args&) {
    int64_t x = int_of(v, "odd");
    return (x % 2 + 2) % 2 == 1;
}
bool t_even(Interp&, const Value& v, Args&) { return int_of(v, "even") % 2 == 0; }
bool t_divisibleby(Interp&, const Value& v, Args& a) {
    int64_t d = int_of(first_arg(a, "num"), "divisibleby");
    if (d == 0) fail("integer division or modulo by zero");
    return int_of(v, "divisibleby") % d == 0;
}

bool t_eq(Interp&, const Value& v, Args& a) { return equals(v, first_arg(a, "other")); }
bool t_ne(Interp&, const Value& v, Args& a) { return !equals(v, first_arg(a, "other")); }
bool t_lt(Interp&, const Value& v, Args& a) { return less(v, first_arg(a, "other")); }
bool t_gt(Interp&, const Value& v, Args& a) { return less(first_arg(a, "other"), v); }
bool t_le(Interp&, const Value& v, Args& a) {
    Value o = first_arg(a, "other");
    return less(v, o) || equals(v, o);
}
bool t_ge(Interp&, const Value& v, Args& a) {
    Value o = first_arg(a, "other");
    return less(o, v) || equals(v, o);
}
bool t_sameas(Interp&, const Value& v, Args& a) {
    Value o = first_arg(a, "other");
    if (v.is_none() || v.is_bool() || v.is_undefined()) return v.kind() == o.kind() && equals(v, o);
    return v.same_object(o) && v.kind() == o.kind() && (v.is_list() || v.is_dict() || v.is_callable() || v.is_namespace());
}

bool t_in(Interp&, const Value& v, Args& a) {
    Value seq = first_arg(a, "seq");
    if (seq.is_string()) {
        if (!v.is_string()) fail("'in <string>' requires string as left operand, not " + v.type_name());
        return seq.str().find(v.str()) != std::string::npos;
    }
    if (seq.is_dict()) return seq.find(v) != nullptr;
    for (const Value& x : iterate(seq))
        if (equals(x, v)) return true;
    return false;
}

bool t_lower(Interp&, const Value& v, Args&) {
    std::string s = v.to_str();
    return py_lower(s) == s && py_upper(s) != s;
}
bool t_upper(Interp&, const Value& v, Args&) {
    std::string s = v.to_str();
    return py_upper(s) == s && py_lower(s) != s;
}
bool t_filter(Interp&, const Value& v, Args&) { return v.is_string() && find_filter(v.str()) != nullptr; }
bool t_test(Interp&, const Value& v, Args&) { return v.is_string() && find_test(v.str()) != nullptr; }

const std::map<std::string, TestFn, std::less<>>& table() {
    static const std::map<std::string, TestFn, std::less<>> t = {
        {"!=", t_ne},
        {"<", t_lt},
        {"<=", t_le},
        {"==", t_eq},
        {">", t_gt},
        {">=", t_ge},
        {"boolean", t_boolean},
        {"callable", t_callable},
        {"defined", t_defined},
        {"divisibleby", t_divisibleby},
        {"eq", t_eq},
        {"equalto", t_eq},
        {"escaped", t_escaped},
        {"even", t_even},
        {"false", t_false},
        {"filter", t_filter},
        {"float", t_float},
        {"ge", t_ge},
        {"greaterthan", t_gt},
        {"gt", t_gt},
        {"in", t_in},
        {"integer", t_integer},
        {"iterable", t_iterable},
        {"le", t_le},
        {"lessthan", t_lt},
        {"lower", t_lower},
        {"lt", t_lt},
        {"mapping", t_mapping},
        {"ne", t_ne},
        {"none", t_none},
        {"number", t_number},
        {"odd", t_odd},
        {"sameas", t_sameas},
        {"sequence", t_sequence},
        {"string", t_string},
        {"test", t_test},
        {"true", t_true},
        {"undefined", t_undefined},
        {"upper", t_upper},
    };
    return t;
}

}  // namespace

TestFn find_test(std::string_view name) {
    auto it = table().find(name);
    return it == table().end() ? nullptr : it->second;
}

bool run_test(Interp& in, std::string_view name, const Value& v, Args& a) {
    TestFn t = find_test(name);
    if (!t) fail("No test named '" + std::string(name) + "'.");
    return t(in, v, a);
}

}  // namespace ls::jinja
