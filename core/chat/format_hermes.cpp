// Hermes 2 Pro / Qwen 2.5 / Qwen 3 / SmolLM3 / Granite 4: each call is a JSON object between
// tags, anywhere in the reply:
//   Let me look.<tool_call>
//   {"name": "get_weather", "arguments": {"city": "Paris"}}
//   </tool_call>
// A block may hold several objects (some models write them so); a missing closer is forgiven
// once the object is whole. A <tool_call> not followed by a call object is content.
#include <optional>

#include "core/chat/format_impl.h"

namespace ls::chat::detail {
namespace {

constexpr std::string_view kOpen = "<tool_call>", kClose = "</tool_call>";

struct HermesReader : Reader {
    enum { Text, Open, Obj, Close } st = Text;
    size_t mark = 0;  // where the open tag began
    CallKeys keys;
    std::optional<ObjCall> obj;

    void not_a_call(Ctx& c) {
        c.pos = mark;
        c.content(kOpen.size());
        st = Text;
    }

    void step(Ctx& c) override {
        for (;;) {
            switch (st) {
            case Text: {
                Found f = find_first(c.rest(), {kOpen}, c.final);
                c.content(f.at);
                if (f.which < 0) return;
                mark = c.pos;
                c.skip(kOpen.size());
                st = Open;
                break;
            }
            case Open: {
                size_t i = skip_ws(c.rest());
                if (i == c.rest().size()) {
                    if (!c.final) return;
                    not_a_call(c);
                    break;
                }
                if (c.rest()[i] != '{') {
                    not_a_call(c);
                    break;
                }
                obj.emplace(keys, c.pos + i);
                st = Obj;
                break;
            }
            case Obj: {
                ObjCall::Result r = obj->step(c);
                if (r == ObjCall::More) return;
                if (r == ObjCall::Bad) {
                    if (obj->announced) return c.fail("tool call " + std::to_string(c.calls() - 1) + ": malformed call object");
                    not_a_call(c);
                    break;
                }
                c.pos = obj->end;
                st = Close;
                break;
            }
            case Close: {
                size_t i = skip_ws(c.rest());
                std::string_view r = c.rest().substr(i);
                if (!r.empty() && r[0] == '{') {  // another object in the same block
                    c.end_call();
                    obj.emplace(keys, c.pos + i);
                    st = Obj;
                    break;
                }
                int s = starts(r, kClose);
                if (s == 0 && !c.final) return;
                if (s == 1) c.skip(i + kClose.size());
                c.end_call();
                st = Text;
                break;
            }
            }
        }
    }
};

}  // namespace

std::unique_ptr<Reader> make_hermes_reader() { return std::make_unique<HermesReader>(); }

}  // namespace ls::chat::detail
