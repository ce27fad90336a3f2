// A Jinja template interpreter that renders chat templates byte-identically to Python's
// jinja2 in Hugging Face's environment (ImmutableSandboxedEnvironment, trim_blocks,
// lstrip_blocks, loopcontrols, HF's tojson, raise_exception and strftime_now).
#pragma once
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>

#include "core/jinja/value.h"

namespace ls::jinja {

struct Options {
    bool trim_blocks = true, lstrip_blocks = true, keep_trailing_newline = false;
    // strftime_now(fmt) in templates; null: the local time's strftime.
    std::function<std::string(const std::string& fmt)> strftime_now;
    // Bounds a hostile template meets as an Error instead of exhausting the machine.
    size_t max_output = 64u << 20;
    size_t max_iterations = 1'000'000;  // loop iterations (and range/repeat sizes), whole render
    int max_call_depth = 100;           // nested macro calls
    int max_nesting = 1000;             // nested statements and expressions being evaluated
};

// what(): "chat template, line N: <construct>: <problem>". For raise_exception, construct is
// "raise_exception" and problem is the template's message unchanged.
struct Error : std::runtime_error {
    int line;
    std::string construct, problem;
    Error(int line, std::string construct, std::string problem);
};

class Template {
 public:
    explicit Template(std::string_view source, Options opt = {});  // throws Error on syntax errors
    ~Template();
    Template(Template&&) noexcept;
    Template& operator=(Template&&) noexcept;
    // `context` is a dict of the template's variables.
    std::string render(const Value& context) const;

 private:
    struct Parsed;
    std::unique_ptr<Parsed> p_;
    Options opt_;
};

}  // namespace ls::jinja
