// Functionary v3.2: the prompt ends with ">>>", and the reply is a run of parts, each a
// recipient's name, a newline and a body, the next one after ">>>":
//   all
//   Let me check.>>>get_weather
//   {"city": "Paris"}
// "all" is content; another name is a call whose body is its JSON arguments ("python" may
// have code instead: a call of "python" {"code": ..}). A first line that is not a name is
// content. (v3.1, <function=NAME>{..}</function>, is read in format_named.cpp.)
#include "core/chat/format_impl.h"

namespace ls::chat::detail {
namespace {

constexpr std::string_view kNext = ">>>";

struct FunctionaryV32Reader : Reader {
    enum { Name, All, Args, InArgs, Code } st = Name;
    JsonScan val;
    size_t sent = 0;
    bool after_marker = false;  // this part's name follows a ">>>"

    void step(Ctx& c) override {
        for (;;) {
            if (c.error) return;
            switch (st) {
            case Name: {
                std::string_view r = c.rest();
                size_t nl = r.find('\n');
                if (nl == npos && !c.final && r.size() < 128) return;
                std::string_view name = r.substr(0, nl);
                bool ok = nl != npos && !name.empty() &&
                          name.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-.") == npos;
                if (!ok || name == "all") {
                    if (ok) c.skip(nl + 1);
                    else if (after_marker) c.content_text(kNext);  // not a part: the ">>>" was text
                    st = All;
                    break;
                }
                c.skip(nl + 1);
                size_t i = skip_ws(c.rest());
                if (name == "python" && (i == c.rest().size() ? c.final : c.rest()[i] != '{')) {
                    st = Code;
                    break;
                }
                if (i == c.rest().size() && !c.final) {  // wait to see how the body opens
                    c.pos -= nl + 1;
                    return;
                }
                c.begin_call(std::string(name));
                c.skip(i);
                val = JsonScan(c.pos);
                sent = c.pos;
                st = InArgs;
                break;
            }
            case All: {
                Found f = find_first(c.rest(), {kNext}, c.final);
                c.content(f.at);
                if (f.which < 0) return;
                c.skip(kNext.size());
                after_marker = true;
                st = Name;
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
                    if (c.final) c.fail("tool call " + std::to_string(c.calls() - 1) + " is not finished at the end of the reply");
                    return;
                }
                c.pos = val.end;
                c.end_call();
                st = All;  // text up to the next >>> is content (whitespace dropped)
                break;
            }
            case Code: {
                Found f = find_first(c.rest(), {kNext}, c.final);
                if (f.which < 0 && !c.final) return;
                python_code_call(c, c.rest().substr(0, f.at));
                c.skip(f.at);
                if (f.which >= 0) c.skip(kNext.size());
                after_marker = f.which >= 0;
                st = f.which >= 0 ? Name : All;
                break;
            }
            case Args: st = InArgs; break;
            }
        }
    }
};

}  // namespace

std::unique_ptr<Reader> make_functionary_v32_reader() { return std::make_unique<FunctionaryV32Reader>(); }

}  // namespace ls::chat::detail
