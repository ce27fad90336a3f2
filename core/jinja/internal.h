// What the interpreter's files share and the public API does not show.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/jinja/value.h"

namespace ls::jinja {

// A failure while rendering, before the evaluator knows the line; it adds line and construct.
// `raised` marks raise_exception's message, which must surface unchanged.
struct Fail {
    std::string msg;
    bool raised = false;
};
[[noreturn]] void fail(std::string msg);

// Python strings are sequences of code points; ours are UTF-8 bytes.
std::vector<std::string_view> code_points(std::string_view s);
size_t cp_length(std::string_view s);
bool is_py_space(uint32_t cp);
std::string py_strip(std::string_view s, bool left, bool right, const Value& chars);
std::string py_upper(std::string_view s);
std::string py_lower(std::string_view s);
std::string html_escape(std::string_view s);

// Python slice semantics over a length: the indices a[start:stop:step] visits.
std::vector<int64_t> slice_indices(int64_t len, const Value& start, const Value& stop, const Value& step);

int64_t checked_int(const Value& v, const char* what);

class Interp;
// A filter or test: the value, then the arguments written after its name.
using FilterFn = Value (*)(Interp&, const Value&, Args&);
using TestFn = bool (*)(Interp&, const Value&, Args&);
FilterFn find_filter(std::string_view name);
TestFn find_test(std::string_view name);
bool run_test(Interp& in, std::string_view name, const Value& v, Args& a);
Value run_filter(Interp& in, std::string_view name, const Value& v, Args& a);

// x.name as jinja2's sandbox resolves it: a Python attribute (method) first, then an item.
// `items` false: a Python attribute only (the `attr` filter), never a dict's key.
Value get_attr(const Value& obj, const std::string& name, bool items = true);
// x[key]: an item first, then (for a string key) an attribute.
Value get_item(const Value& obj, const Value& key);

// Argument binding for builtins: positional first, then by keyword, else the default.
Value arg(Args& a, size_t pos, std::string_view name, Value dflt = Value());
bool has_arg(Args& a, size_t pos, std::string_view name);

// Iteration as Python's iter(): a list's items, a dict's keys, a string's characters;
// undefined gives nothing. Fails on what Python cannot iterate.
std::vector<Value> iterate(const Value& v);

}  // namespace ls::jinja
