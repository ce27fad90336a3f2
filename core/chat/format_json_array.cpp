// A JSON array of call objects after a marker (and before a closer, where the family has one):
//   Mistral Nemo (v3 tokenizer):  [TOOL_CALLS][{"name": "f", "arguments": {..}, "id": "a1b2c3d4e"}]
//   Granite 3.x:                  <|tool_call|>[{"name": "f", "arguments": {..}}]
//   Nemotron Nano v2:             <TOOLCALL>[{"name": "f", "arguments": {..}}]</TOOLCALL>
//   Apriel 1.5/1.6:               <tool_calls>[{"name": "f", "arguments": {..}}]</tool_calls>
//   FireFunction v2:              functools[{"name": "f", "arguments": {..}}]
//   Command-R7B:                  <|START_THINKING|>plan<|END_THINKING|><|START_ACTION|>[
//                                   {"tool_call_id": "0", "tool_name": "f", "parameters": {..}}
//                                 ]<|END_ACTION|>
// Mistral's ids follow the arguments, so its calls are announced when their object closes.
// Command-R7B's thinking is reasoning and its <|START_RESPONSE|> / <|END_RESPONSE|> wrapper is
// dropped; its tool_call_ids ("0", "1") number calls within a turn, so they are not kept.
#include <optional>

#include "core/chat/format_impl.h"

namespace ls::chat::detail {
namespace {

struct ArraySpec {
    std::string_view open, close;
    CallKeys keys;
    std::string_view think_open{}, think_close{};
    std::vector<std::string_view> drop{};
};

ArraySpec spec_for(Format f) {
    ArraySpec s;
    switch (f) {
    case Format::MistralNemo:
        s.open = "[TOOL_CALLS]";
        s.keys.id = {"id"};
        break;
    case Format::Granite: s.open = "<|tool_call|>"; break;
    case Format::NemotronV2:
        s.open = "<TOOLCALL>";
        s.close = "</TOOLCALL>";
        break;
    case Format::Apriel:
        s.open = "<tool_calls>";
        s.close = "</tool_calls>";
        break;
    case Format::FireFunction: s.open = "functools"; break;
    case Format::CommandR7B:
        s.open = "<|START_ACTION|>";
        s.close = "<|END_ACTION|>";
        s.keys.name = {"tool_name"};
        s.keys.args = {"parameters"};
        s.think_open = "<|START_THINKING|>";
        s.think_close = "<|END_THINKING|>";
        s.drop = {"<|START_RESPONSE|>", "<|END_RESPONSE|>"};
        break;
    default: break;
    }
    return s;
}

struct ArrayReader : Reader {
    ArraySpec s;
    enum { Text, Think, Open, Elem, Obj, After, Close } st = Text;
    size_t mark = 0;
    bool announced = false;  // a call of this array was announced
    std::optional<ObjCall> obj;
    std::vector<std::string_view> markers;

    explicit ArrayReader(Format f) : s(spec_for(f)) {
        markers = {s.open};
        if (!s.think_open.empty()) markers.push_back(s.think_open);
        for (std::string_view d : s.drop) markers.push_back(d);
    }

    // The array is not calls after all: its marker is content, unless a call was announced.
    void broken(Ctx& c) {
        if (announced) return c.fail("tool call array: malformed after call " + std::to_string(c.calls() - 1));
        c.pos = mark;
        c.content(s.open.size());
        st = Text;
    }

    // Skips whitespace; the next byte, or 0 when more text is needed (or none comes).
    char peek(Ctx& c) {
        size_t i = skip_ws(c.rest());
        c.skip(i);
        return c.at_end() ? 0 : c.rest()[0];
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
                if (m == s.open) {
                    mark = c.pos;
                    c.skip(m.size());
                    announced = false;
                    st = Open;
                } else if (m == s.think_open) {
                    c.skip(m.size());
                    st = Think;
                } else {
                    c.skip(m.size());
                }
                break;
            }
            case Think: {
                Found f = find_first(c.rest(), {s.think_close}, c.final);
                c.reasoning(f.at);
                if (f.which < 0) return;
                c.skip(s.think_close.size());
                c.drop_ws_after_call = true;
                st = Text;
                break;
            }
            case Open: {
                char ch = peek(c);
                if (!ch && !c.final) return;
                if (ch != '[') {
                    broken(c);
                    break;
                }
                c.skip(1);
                st = Elem;
                break;
            }
            case Elem: {
                char ch = peek(c);
                if (!ch && !c.final) return;
                if (ch == ']' && !announced) {
                    c.skip(1);
                    st = Close;
                } else if (ch == '{') {
                    obj.emplace(s.keys, c.pos);
                    st = Obj;
                } else {
                    broken(c);
                }
                break;
            }
            case Obj: {
                ObjCall::Result r = obj->step(c);
                if (r == ObjCall::More) return;
                if (obj->announced) announced = true;
                if (r == ObjCall::Bad) {
                    broken(c);
                    break;
                }
                c.pos = obj->end;
                c.end_call();
                st = After;
                break;
            }
            case After: {
                char ch = peek(c);
                if (!ch && !c.final) return;
                if (ch == ',') {
                    c.skip(1);
                    st = Elem;
                } else if (ch == ']') {
                    c.skip(1);
                    st = Close;
                } else if (!ch) {
                    return c.fail("tool call array is not closed at the end of the reply");
                } else {
                    broken(c);
                }
                break;
            }
            case Close: {
                if (!s.close.empty()) {
                    size_t i = skip_ws(c.rest());
                    int m = starts(c.rest().substr(i), s.close);
                    if (m == 0 && !c.final) return;
                    if (m == 1) c.skip(i + s.close.size());
                }
                st = Text;
                break;
            }
            }
        }
    }
};

}  // namespace

std::unique_ptr<Reader> make_json_array_reader(Format f) { return std::make_unique<ArrayReader>(f); }
std::unique_ptr<Reader> make_command_r7b_reader() { return std::make_unique<ArrayReader>(Format::CommandR7B); }

}  // namespace ls::chat::detail
