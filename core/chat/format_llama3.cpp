// Llama 3.1 / 3.2 / 3.3: a call is the whole reply, a JSON object (several: one after another,
// apart by ';' or whitespace):
//   {"name": "get_weather", "parameters": {"city": "Paris"}}
// ("type": "function" may come with it; "arguments" is read like "parameters"). A builtin tool
// (3.1's brave_search, wolfram_alpha) is called after <|python_tag|> as Python:
//   <|python_tag|>brave_search.call(query="weather in Paris")
// and other code there is a call of "python" {"code": ..}; JSON after the tag is a call as
// above. A reply that opens with '{' but is not such an object (another key than those, or a
// name that is not a declared tool) is content.
#include <optional>

#include "core/chat/format_impl.h"

namespace ls::chat::detail {
namespace {

using nlohmann::ordered_json;
constexpr std::string_view kTag = "<|python_tag|>";

// A Python literal (string, number, True/False/None) at s[i]; advances i.
std::optional<ordered_json> py_literal(std::string_view s, size_t& i) {
    if (i >= s.size()) return std::nullopt;
    char q = s[i];
    if (q == '"' || q == '\'') {
        std::string v;
        for (++i; i < s.size(); ++i) {
            char ch = s[i];
            if (ch == q) {
                ++i;
                return ordered_json(v);
            }
            if (ch == '\\' && i + 1 < s.size()) {
                char n = s[++i];
                v += n == 'n' ? '\n' : n == 't' ? '\t' : n;
            } else {
                v += ch;
            }
        }
        return std::nullopt;
    }
    size_t b = i;
    while (i < s.size() && s[i] != ',' && s[i] != ')' && !is_ws(s[i])) ++i;
    std::string_view w = s.substr(b, i - b);
    if (w == "True") return ordered_json(true);
    if (w == "False") return ordered_json(false);
    if (w == "None") return ordered_json(nullptr);
    auto j = ordered_json::parse(w, nullptr, false);
    if (j.is_discarded() || !j.is_number()) return std::nullopt;
    return j;
}

// name.call(key=value, ...) filling the whole text; nullopt when it is something else.
std::optional<std::pair<std::string, ordered_json>> builtin_call(std::string_view s) {
    size_t i = skip_ws(s), b = i;
    while (i < s.size() && (isalnum((unsigned char)s[i]) || s[i] == '_')) ++i;
    if (i == b || s.substr(i, 6) != ".call(") return std::nullopt;
    std::string name(s.substr(b, i - b));
    i += 6;
    ordered_json args = ordered_json::object();
    for (;;) {
        i = skip_ws(s, i);
        if (i < s.size() && s[i] == ')') break;
        size_t kb = i;
        while (i < s.size() && (isalnum((unsigned char)s[i]) || s[i] == '_')) ++i;
        if (i == kb) return std::nullopt;
        std::string key(s.substr(kb, i - kb));
        i = skip_ws(s, i);
        if (i >= s.size() || s[i] != '=') return std::nullopt;
        i = skip_ws(s, i + 1);
        auto v = py_literal(s, i);
        if (!v) return std::nullopt;
        args[key] = *v;
        i = skip_ws(s, i);
        if (i < s.size() && s[i] == ',') ++i;
        else if (i >= s.size() || s[i] != ')') return std::nullopt;
    }
    if (skip_ws(s, i + 1) != s.size()) return std::nullopt;
    return std::make_pair(name, args);
}

struct Llama3Reader : Reader {
    enum { Start, Text, Obj, After, Tag, Python } st = Start;
    CallKeys keys, tag_keys;
    std::optional<ObjCall> obj;
    size_t mark = 0;

    Llama3Reader() {
        keys.other = {"type"};
        keys.strict = true;
        keys.announce_on_args = true;
        keys.known_names_only = true;
        tag_keys.other = {"type"};
    }

    void step(Ctx& c) override {
        for (;;) {
            if (c.error) return;
            switch (st) {
            case Start:
            case After: {
                std::string_view r = c.rest();
                size_t i = 0;
                while (i < r.size() && (is_ws(r[i]) || (st == After && r[i] == ';'))) ++i;
                if (i == r.size() && !c.final) return;
                int t = starts(r.substr(i), kTag);
                if (t == 0 && !c.final) return;
                if (t == 1) {
                    c.skip(i + kTag.size());
                    st = Tag;
                } else if (i < r.size() && r[i] == '{') {
                    mark = c.pos;
                    if (st == After) c.skip(i);  // the separator goes with the call
                    obj.emplace(keys, c.pos + (st == After ? 0 : i));
                    st = Obj;
                } else {
                    st = Text;
                }
                break;
            }
            case Text: {
                Found f = find_first(c.rest(), {kTag}, c.final);
                c.content(f.at);
                if (f.which < 0) return;
                c.skip(kTag.size());
                st = Tag;
                break;
            }
            case Obj: {
                ObjCall::Result r = obj->step(c);
                if (r == ObjCall::More) return;
                if (r == ObjCall::Bad) {
                    if (obj->announced) return c.fail("tool call " + std::to_string(c.calls() - 1) + ": malformed call object");
                    c.pos = mark;  // not a call: content
                    st = Text;
                    break;
                }
                c.pos = obj->end;
                c.end_call();
                st = After;
                break;
            }
            case Tag: {
                size_t i = skip_ws(c.rest());
                if (i == c.rest().size() && !c.final) return;
                if (i < c.rest().size() && c.rest()[i] == '{') {
                    mark = c.pos;
                    obj.emplace(tag_keys, c.pos + i);
                    st = Obj;
                } else {
                    st = Python;
                }
                break;
            }
            case Python: {
                if (!c.final) return;
                std::string_view code = c.rest();
                if (auto b = builtin_call(code)) {
                    c.begin_call(b->first);
                    c.args(b->second.dump(-1, ' ', false, ordered_json::error_handler_t::replace));
                    c.end_call();
                } else {
                    python_code_call(c, code);
                }
                c.skip(code.size());
                st = Text;
                break;
            }
            }
        }
    }
};

}  // namespace

std::unique_ptr<Reader> make_llama3_reader() { return std::make_unique<Llama3Reader>(); }

}  // namespace ls::chat::detail
