// Formats that write a marker, the function's name, a separator and the arguments as JSON:
//   Mistral (v11+ tokenizer: Small 3.2, Devstral, Ministral 3, Magistral):
//       [TOOL_CALLS]get_weather[ARGS]{"city": "Paris"}     ([CALL_ID]a1b2c3d4e before [ARGS]
//       in some: the id is kept)
//   DeepSeek R1:   <｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>get_weather
//                  ```json
//                  {"city": "Paris"}
//                  ```<｜tool▁call▁end｜><｜tool▁calls▁end｜>
//   DeepSeek V3.1: <｜tool▁calls▁begin｜><｜tool▁call▁begin｜>get_weather<｜tool▁sep｜>{"city": "Paris"}
//                  <｜tool▁call▁end｜><｜tool▁calls▁end｜>
//   Kimi K2:       <|tool_calls_section_begin|><|tool_call_begin|>functions.get_weather:0
//                  <|tool_call_argument_begin|>{"city": "Paris"}<|tool_call_end|><|tool_calls_section_end|>
//                  (the id "functions.get_weather:0" is kept: Kimi's template writes it back)
//   Functionary v3.1: <function=get_weather>{"city": "Paris"}</function>, and
//                  <|python_tag|>code to the end of the reply: a call of "python" {"code": ..}
// The section markers around the calls are dropped wherever they are. A marker whose name
// never ends (a newline or 256 bytes first) is content.
#include "core/chat/format_impl.h"

namespace ls::chat::detail {

// <|python_tag|> followed by code: a "python" call whose argument is the code (Llama 3.1,
// Functionary v3.1), emitted at the end of the reply.
void python_code_call(Ctx& c, std::string_view code) {
    c.begin_call("python");
    nlohmann::ordered_json a = {{"code", std::string(code)}};
    c.args(a.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace));
    c.end_call();
}

namespace {

struct NamedSpec {
    std::vector<std::string_view> drop;  // section markers
    std::string_view open;               // opens a call, before the name
    std::string_view name_prefix{};      // dropped from the front of the name
    std::string_view name_end;           // after the name
    std::string_view id_marker{};        // between name and id (id ends at name_end)
    bool fence = false;                  // arguments may sit in ```json ... ```
    std::string_view close{};            // after the arguments (forgiven when missing)
    bool kimi_id = false;                // name is "functions.NAME:N", kept as the id
    bool python_tag = false;
};

NamedSpec spec_for(Format f) {
    NamedSpec s;
    switch (f) {
    case Format::Mistral:
        s.open = "[TOOL_CALLS]";
        s.name_end = "[ARGS]";
        s.id_marker = "[CALL_ID]";
        break;
    case Format::DeepSeekR1:
    case Format::DeepSeekV31:
        s.drop = {"<｜tool▁calls▁begin｜>", "<｜tool▁calls▁end｜>", "<｜tool_calls_begin｜>", "<｜tool_calls_end｜>"};
        s.open = "<｜tool▁call▁begin｜>";
        s.close = "<｜tool▁call▁end｜>";
        if (f == Format::DeepSeekR1) {
            s.name_prefix = "function<｜tool▁sep｜>";
            s.name_end = "\n";
            s.fence = true;
        } else {
            s.name_end = "<｜tool▁sep｜>";
        }
        break;
    case Format::KimiK2:
        s.drop = {"<|tool_calls_section_begin|>", "<|tool_calls_section_end|>"};
        s.open = "<|tool_call_begin|>";
        s.name_end = "<|tool_call_argument_begin|>";
        s.close = "<|tool_call_end|>";
        s.kimi_id = true;
        break;
    case Format::FunctionaryV31:
        s.open = "<function=";
        s.name_end = ">";
        s.close = "</function>";
        s.python_tag = true;
        break;
    default: break;
    }
    return s;
}

constexpr std::string_view kPythonTag = "<|python_tag|>";

struct NamedReader : Reader {
    NamedSpec s;
    std::vector<std::string_view> markers;
    enum { Text, Name, Args, InArgs, AfterArgs, Python } st = Text;
    size_t mark = 0, sent = 0;
    JsonScan val;

    explicit NamedReader(Format f) : s(spec_for(f)) {
        markers = s.drop;
        markers.push_back(s.open);
        if (s.python_tag) markers.push_back(kPythonTag);
    }

    void not_a_call(Ctx& c) {
        c.pos = mark;
        c.content(s.open.size());
        st = Text;
    }

    bool name_call(Ctx& c) {
        std::string_view r = c.rest();
        size_t e = r.find(s.name_end);
        size_t ie = s.id_marker.empty() ? npos : r.find(s.id_marker);
        size_t nl = s.name_end == "\n" ? npos : r.find('\n');
        size_t first = std::min(e, ie);
        if (e == npos || nl < first) {
            if (nl != npos || r.size() > 256 || c.final) not_a_call(c);
            return false;
        }
        std::string_view name = r.substr(0, first);
        std::string id;
        size_t after = e + s.name_end.size();
        if (ie < e) {
            id = std::string(r.substr(ie + s.id_marker.size(), e - ie - s.id_marker.size()));
            name = r.substr(0, ie);
        }
        if (name.substr(0, s.name_prefix.size()) == s.name_prefix) name.remove_prefix(s.name_prefix.size());
        while (!name.empty() && is_ws(name.front())) name.remove_prefix(1);
        while (!name.empty() && is_ws(name.back())) name.remove_suffix(1);
        if (s.kimi_id) {
            id = std::string(name);
            if (name.substr(0, 10) == "functions.") name.remove_prefix(10);
            size_t colon = name.rfind(':');
            if (colon != npos) name = name.substr(0, colon);
        }
        if (name.empty()) {
            not_a_call(c);
            return false;
        }
        c.begin_call(std::string(name), id);
        c.skip(after);
        return true;
    }

    void step(Ctx& c) override {
        for (;;) {
            if (c.error) return;
            switch (st) {
            case Text: {
                Found f = find_first(c.rest(), markers, c.final);
                c.content(f.at);
                if (f.which < 0) return;
                std::string_view m = markers[f.which];
                mark = c.pos;
                c.skip(m.size());
                if (m == s.open) st = Name;
                else if (m == kPythonTag) st = Python;
                break;
            }
            case Name:
                if (!name_call(c)) {
                    if (st == Name) return;
                    break;
                }
                st = Args;
                break;
            case Args: {
                std::string_view r = c.rest();
                size_t i = skip_ws(r);
                if (s.fence) {
                    for (std::string_view f : {std::string_view("```json"), std::string_view("```")}) {
                        int m = starts(r.substr(i), f);
                        if (m == 0 && !c.final) return;
                        if (m == 1) {
                            i = skip_ws(r, i + f.size());
                            break;
                        }
                    }
                }
                if (i == r.size() && !c.final) return;
                c.skip(i);
                val = JsonScan(c.pos);
                sent = c.pos;
                st = InArgs;
                break;
            }
            case InArgs: {
                bool done = val.scan(c.buf, c.final);
                if (val.bad || (val.start != npos && val.kind != '{'))
                    return c.fail("tool call " + std::to_string(c.calls() - 1) + ": its arguments are not a JSON object");
                size_t upto = done ? val.end : val.at;
                c.args(std::string_view(c.buf).substr(sent, upto - sent));
                sent = upto;
                if (!done) {
                    if (c.final) return c.fail("tool call " + std::to_string(c.calls() - 1) + " is not finished at the end of the reply");
                    return;
                }
                c.pos = val.end;
                st = AfterArgs;
                break;
            }
            case AfterArgs: {
                std::string_view r = c.rest();
                size_t i = skip_ws(r);
                if (s.fence) {
                    int m = starts(r.substr(i), "```");
                    if (m == 0 && !c.final) return;
                    if (m == 1) i = skip_ws(r, i + 3);
                }
                if (!s.close.empty()) {
                    int m = starts(r.substr(i), s.close);
                    if (m == 0 && !c.final) return;
                    if (m == 1) i += s.close.size();
                    else if (s.fence) i = 0;  // leave the text as it was
                } else {
                    i = 0;
                }
                c.skip(i);
                c.end_call();
                st = Text;
                break;
            }
            case Python:
                if (!c.final) return;
                python_code_call(c, c.rest());
                c.skip(c.rest().size());
                st = Text;
                break;
            }
        }
    }
};

}  // namespace

std::unique_ptr<Reader> make_named_reader(Format f) { return std::make_unique<NamedReader>(f); }

}  // namespace ls::chat::detail
