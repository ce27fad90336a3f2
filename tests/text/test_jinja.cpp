// The Jinja interpreter: semantics (expected strings are Python jinja2's output in Hugging
// Face's environment), its errors, and its limits against hostile templates. The corpus-wide
// byte-identity check against jinja2 is tests/text/jinja_corpus.py.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "core/jinja/template.h"
#include "tests/support/test_util.h"

using namespace ls::jinja;

namespace {

Value context() {
    return from_json(nlohmann::ordered_json::parse(R"({"xs": [3, 1, 2], "d": {"b": 1, "a": 2}, "s": "Hello World", "n": null})"));
}

std::string render(const std::string& src, const Value& ctx = context(), Options opt = {}) {
    return Template(src, std::move(opt)).render(ctx);
}

// The Error a template raises (parsing or rendering); fails the test if it renders.
Error error_of(const std::string& src, Options opt = {}) {
    try {
        Template t(src, std::move(opt));
        t.render(context());
    } catch (const Error& e) {
        return e;
    }
    FAIL("expected an Error from: " << src);
    return Error(0, "", "");
}

}  // namespace

TEST_CASE("jinja: whitespace control as jinja2 with trim_blocks and lstrip_blocks", "[jinja]") {
    CHECK(render("{% for x in xs %}\n  {{ x }}\n{% endfor %}\n") == "  3\n  1\n  2\n");
    CHECK(render("  {% if true %}\n    yes\n  {% endif %}\nend") == "    yes\nend");
    CHECK(render("a {{- ' b ' -}} c\n{#- x -#}\n d") == "a b cd");
    CHECK(render("{%+ if true %}x{% endif +%}\ny") == "x\ny");
    // One trailing newline is dropped unless keep_trailing_newline.
    CHECK(render("x\n") == "x");
    Options keep;
    keep.keep_trailing_newline = true;
    CHECK(render("x\n", context(), keep) == "x\n");
    Options plain;
    plain.trim_blocks = plain.lstrip_blocks = false;
    CHECK(render("  {% if true %}\nx{% endif %}", context(), plain) == "  \nx");
}

TEST_CASE("jinja: values print as Python prints them", "[jinja]") {
    CHECK(render("{{ [1, 'a', none, true, 1.5, {'k': \"it's\"}] }} {{ (1,) }} {{ 0.1 + 0.2 }} {{ 1e16 }} {{ 1e-5 }} {{ 3.0 }}") ==
          "[1, 'a', None, True, 1.5, {'k': \"it's\"}] (1,) 0.30000000000000004 1e+16 1e-05 3.0");
    CHECK(render("{{ 7 // 2 }} {{ -7 // 2 }} {{ -7 % 3 }} {{ 7 / 2 }} {{ 2 ** 10 }} {{ 'ab' * 2 }}") == "3 -4 2 3.5 1024 abab");
    CHECK(render("{{ 1 == 1.0 }} {{ true == 1 }} {{ (1, 2) == [1, 2] }} {{ 'a' ~ 1 ~ none }}") == "True True False a1None");
}

TEST_CASE("jinja: tojson is Hugging Face's json.dumps", "[jinja]") {
    CHECK(render("{{ {'a': [1, 2.5, 'é\\n'], 'b': none} | tojson }}|{{ {'a': [1, {}]} | tojson(indent=2) }}|"
                 "{{ 'é' | tojson(ensure_ascii=true) }}") ==
          "{\"a\": [1, 2.5, \"é\\n\"], \"b\": null}|{\n  \"a\": [\n    1,\n    {}\n  ]\n}|\"\\u00e9\"");
    CHECK(render("{{ d | tojson(sort_keys=true) }} {{ d | tojson(separators=(',', ':')) }}") == "{\"a\": 2, \"b\": 1} {\"b\":1,\"a\":2}");
}

TEST_CASE("jinja: loops, namespaces, scoping", "[jinja]") {
    CHECK(render("{% for x in xs %}{{ loop.index }}{{ loop.first }}{{ loop.last }}{{ loop.revindex0 }}{{ loop.previtem }}"
                 "{{ loop.cycle('a','b') }};{% endfor %}") == "1TrueFalse2a;2FalseFalse13b;3FalseTrue01a;");
    CHECK(render("{% set ns = namespace(t=0) %}{% for x in xs if x > 1 %}{% set ns.t = ns.t + x %}{% set local = 1 %}"
                 "{% endfor %}{{ ns.t }} {{ local is defined }}") == "5 False");
    CHECK(render("{% for k, v in d.items() %}{{ k }}={{ v }},{% endfor %}{% for x in [] %}x{% else %}empty{% endfor %}") ==
          "b=1,a=2,empty");
    CHECK(render("{% for x in xs %}{% if x == 1 %}{% continue %}{% endif %}{% if x == 2 %}{% break %}{% endif %}{{ x }}{% endfor %}") == "3");
    CHECK(render("{% if true %}{% set leaked = 1 %}{% endif %}{{ leaked }}") == "1");
    CHECK(render("{% set a, b = 1, 2 %}{{ a }}{{ b }}{% set blk %} {{ s }} {% endset %}[{{ blk }}]") == "12[ Hello World ]");
}

TEST_CASE("jinja: macros, call blocks, filter blocks, generation", "[jinja]") {
    CHECK(render("{% macro m(a, b=2) %}{{ a }}{{ b }}{{ kwargs }}{% endmacro %}{{ m(1) }} {{ m(1, b=3) }} {{ m(0, z=1) }}"
                 "{% macro w() %}[{{ caller('v') }}]{% endmacro %}{% call(x) w() %}{{ x }}{% endcall %}") ==
          "12{} 13{} 02{'z': 1}[v]");
    CHECK(render("{% filter upper %}hi {{ s }}{% endfilter %}") == "HI HELLO WORLD");
    CHECK(render("{% generation %}gen{% endgeneration %}") == "gen");
    CHECK(render("{% raw %}{{ not parsed }}{% endraw %}") == "{{ not parsed }}");
    CHECK(render("{% with a = 1, b = 2 %}{{ a + b }}{% endwith %}{{ a is defined }}") == "3False");
}

TEST_CASE("jinja: undefined behaves as jinja2's default Undefined", "[jinja]") {
    CHECK(render("{{ zz }}|{{ zz is defined }}|{{ zz | default('d') }}|{% for x in zz %}x{% endfor %}|{{ zz | length }}|"
                 "{{ n.attr is defined }}") == "|False|d||0|False");
    Error e = error_of("{{ zz.attr }}");
    CHECK(e.problem == "'zz' is undefined");
    CHECK(error_of("{{ d.missing.x }}").problem == "'dict object' has no attribute 'missing'");
    CHECK(error_of("{{ zz + 1 }}").problem == "'zz' is undefined");
}

TEST_CASE("jinja: filters, tests and Python methods", "[jinja]") {
    CHECK(render("{{ xs | sort | join(',') }} {{ d | dictsort }} {{ ['B','a'] | sort }} {{ xs | select('odd') | list }} "
                 "{{ [{'r':'u'},{'r':'a'}] | selectattr('r','equalto','u') | list }} {{ ['a'] | map('upper') | list }}") ==
          "1,2,3 [('a', 2), ('b', 1)] ['a', 'B'] [3, 1] [{'r': 'u'}] ['A']");
    CHECK(render("{{ '  a b  '.split() }} {{ 'a,b,c'.split(',', 1) }} {{ 'xxhixx'.strip('x') }} {{ s.startswith(('x', 'He')) }} "
                 "{{ '{} {}'.format(1, 'b') }} {{ s.title() }} {{ 'Zürich'[1:3] }} {{ 'Zürich' | length }}") ==
          "['a', 'b'] ['a', 'b,c'] hi True 1 b Hello World ür 6");
    CHECK(render("{{ 'a\\nb\\n\\nc' | indent(2) }}|{{ 'a\\nb' | indent(2, first=true) }}") == "a\n  b\n\n  c|  a\n  b");
    // Markup from |safe escapes the plain string it is added to, even with autoescape off.
    CHECK(render("{{ 'x' | safe + '<b>' }} {{ '<&>' | e }}") == "x&lt;b&gt; &lt;&amp;&gt;");
    CHECK(render("{{ n is none }} {{ 1 is number }} {{ xs is sequence }} {{ 9 is divisibleby 3 }} {{ d is mapping }}") ==
          "True True True True True");
    CHECK(render("{{ strftime_now('%Y') | length }}") == "4");
}

TEST_CASE("jinja: syntax errors name the line and what was expected", "[jinja]") {
    Error e = error_of("line one\n{% if x %}\nno end");
    CHECK(e.line == 3);
    CHECK(std::string(e.what()).find("chat template, line 3") == 0);
    CHECK(e.problem.find("expected 'elif' or 'else' or 'endif'") != std::string::npos);
    Error e2 = error_of("\n\n{{ (1 + }}");
    CHECK(e2.line == 3);
    Error e3 = error_of("{% frobnicate %}");
    CHECK(e3.problem.find("unknown tag 'frobnicate'") != std::string::npos);
    Error e4 = error_of("{% for x in xs %}{% endif %}");
    CHECK(e4.problem.find("'endfor'") != std::string::npos);
    CHECK(error_of("{{ 'unterminated }}").construct == "syntax");
}

TEST_CASE("jinja: runtime errors name the construct", "[jinja]") {
    Error e = error_of("\n{{ s | frobnicate }}");
    CHECK(e.line == 2);
    CHECK(e.construct == "filter 'frobnicate'");
    CHECK(e.problem == "No filter named 'frobnicate'.");
    // Inside an `if`, jinja2 defers an unknown filter to when it runs.
    CHECK(render("{% if false %}{{ s | frobnicate }}{% endif %}ok") == "ok");
    CHECK(error_of("{{ x is frobnicated }}").problem == "No test named 'frobnicated'.");

    Error r = error_of("{% if true %}\n{{ raise_exception('Roles must alternate: ' ~ 2) }}{% endif %}");
    CHECK(r.construct == "raise_exception");
    CHECK(r.problem == "Roles must alternate: 2");
    CHECK(r.line == 2);

    // The immutable sandbox refuses methods that would change a list or dict.
    Error m = error_of("{% set l = [] %}{% set _ = l.append(1) %}");
    CHECK(m.problem == "access to attribute 'append' of 'list' object is unsafe.");
    CHECK(error_of("{{ d.update({}) }}").problem.find("unsafe") != std::string::npos);
    CHECK(error_of("{{ 1 + 'a' }}").problem.find("unsupported operand") != std::string::npos);
    CHECK(error_of("{{ 1 // 0 }}").problem.find("by zero") != std::string::npos);
}

TEST_CASE("jinja: hostile templates meet limits, not crashes", "[jinja]") {
    // Unbounded macro recursion.
    Error rec = error_of("{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}");
    CHECK(rec.problem.find("nested deeper") != std::string::npos);
    // Huge loops and ranges.
    CHECK(error_of("{% for i in range(100000000) %}{% endfor %}").problem.find("loop iterations") != std::string::npos);
    CHECK(error_of("{% for i in range(2000) %}{% for j in range(2000) %}{% endfor %}{% endfor %}").problem.find("loop iterations") !=
          std::string::npos);
    // Output and string growth.
    Options small;
    small.max_output = 1000;
    CHECK(error_of("{% for i in range(100) %}{{ 'xxxxxxxxxxxxxxxxxxxxxxxx' }}{% endfor %}", small).problem.find("output larger") !=
          std::string::npos);
    CHECK(error_of("{% set ns = namespace(s='x') %}{% for i in range(64) %}{% set ns.s = ns.s + ns.s %}{% endfor %}").problem.find(
              "longer than") != std::string::npos);
    CHECK(error_of("{{ 'x' * 100000000000 }}").problem.find("too large") != std::string::npos);
    // Deeply nested brackets and blocks are refused while parsing.
    CHECK(error_of("{{ " + std::string(5000, '(') + "1" + std::string(5000, ')') + " }}").problem.find("nested deeper") !=
          std::string::npos);
    std::string ifs;
    for (int i = 0; i < 5000; ++i) ifs += "{% if true %}";
    CHECK(error_of(ifs).problem.find("nested deeper") != std::string::npos);
    // A namespace holding itself: printing stops, and the render releases it (no leak).
    CHECK(error_of("{% set ns = namespace() %}{% set ns.me = ns %}{{ ns }}").problem.find("nested") != std::string::npos);
    // A list nested by a loop cannot grow deeper than printing can follow.
    CHECK(error_of("{% set ns = namespace(l=[]) %}{% for i in range(100000) %}{% set ns.l = [ns.l] %}{% endfor %}{{ ns.l }}")
              .problem.find("nested") != std::string::npos);
}

TEST_CASE("jinja: every corpus template parses", "[jinja]") {
    namespace fs = std::filesystem;
    const char* env = std::getenv("LOCKSTEP_CHAT_TEMPLATES");
    fs::path dir = env ? fs::path(env) : fs::path(ls::test::source_dir()) / ".." / "shared" / "data" / "chat-templates";
    if (!fs::is_directory(dir)) {
        WARN("no chat template corpus at " << dir.string() << "; set LOCKSTEP_CHAT_TEMPLATES");
        return;
    }
    int n = 0;
    for (const auto& entry : fs::directory_iterator(dir)) {
        if (entry.path().extension() != ".jinja") continue;
        std::ifstream f(entry.path(), std::ios::binary);
        std::stringstream ss;
        ss << f.rdbuf();
        INFO(entry.path().filename().string());
        CHECK_NOTHROW(Template(ss.str()));
        ++n;
    }
    CHECK(n > 0);
}
