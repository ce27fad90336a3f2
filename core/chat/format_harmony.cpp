// gpt-oss (harmony): the reply is a run of messages, each a header and a body:
//   <|channel|>analysis<|message|>The user wants the weather.<|end|>
//   <|start|>assistant<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{"city":"Paris"}<|call|>
// or, answering, <|channel|>final<|message|>It is sunny.<|return|>. The analysis channel is
// reasoning; a message with a recipient (to=functions.NAME, in the header before or after the
// channel) is a call of NAME whose body is the arguments; other bodies (final, commentary
// preambles) are content. A recipient outside functions. (python, browser.search) is a call of
// that name. A reply that does not open with a header is content up to the next <|start|>.
#include "core/chat/format_impl.h"

namespace ls::chat::detail {
namespace {

constexpr std::string_view kChannel = "<|channel|>", kMessage = "<|message|>", kStart = "<|start|>";
const std::vector<std::string_view> kBodyEnds = {"<|end|>", "<|call|>", "<|return|>", "<|start|>"};

struct HarmonyReader : Reader {
    enum { Begin, Header, Body, Between } st = Begin;
    enum { ToContent, ToReasoning, ToCall } route = ToContent;

    // The header's channel and recipient.
    void read_header(Ctx& c, std::string_view h) {
        std::string channel, to;
        size_t ch = h.find(kChannel);
        if (ch != npos) {
            size_t b = ch + kChannel.size(), e = b;
            while (e < h.size() && !is_ws(h[e]) && h[e] != '<') ++e;
            channel = std::string(h.substr(b, e - b));
        }
        size_t t = h.find("to=");
        if (t != npos) {
            size_t b = t + 3, e = b;
            while (e < h.size() && !is_ws(h[e]) && h[e] != '<') ++e;
            to = std::string(h.substr(b, e - b));
        }
        if (!to.empty()) {
            if (to.substr(0, 10) == "functions.") to = to.substr(10);
            c.begin_call(to);
            route = ToCall;
        } else {
            route = channel == "analysis" ? ToReasoning : ToContent;
        }
    }

    void step(Ctx& c) override {
        for (;;) {
            if (c.error) return;
            switch (st) {
            case Begin: {  // the reply's first bytes: a header, or plain text
                std::string_view r = c.rest();
                int a = starts(r, kChannel), b = starts(r, " to="), s = starts(r, kStart);
                if (std::max({a, b, s}) == 0 && !c.final) return;
                if (s == 1) c.skip(kStart.size());
                st = std::max({a, b, s}) == 1 ? Header : Body;
                route = ToContent;
                break;
            }
            case Header: {
                std::string_view r = c.rest();
                size_t m = r.find(kMessage);
                if (m == npos) {
                    if (!c.final) return;
                    c.content(r.size());  // a header that never ends: shown as written
                    return;
                }
                read_header(c, r.substr(0, m));
                c.skip(m + kMessage.size());
                st = Body;
                break;
            }
            case Body: {
                Found f = find_first(c.rest(), kBodyEnds, c.final);
                if (route == ToCall) {
                    c.args(c.rest().substr(0, f.at));
                    c.skip(f.at);
                } else if (route == ToReasoning) {
                    c.reasoning(f.at);
                } else {
                    c.content(f.at);
                }
                if (f.which < 0) {
                    // <|call|> and <|return|> end generation: the server may leave them out
                    if (c.final && route == ToCall) c.end_call();
                    return;
                }
                if (route == ToCall) c.end_call();
                c.skip(kBodyEnds[f.which].size());
                // <|start|> opens the next message; text before it is dropped
                st = kBodyEnds[f.which] == kStart ? Header : Between;
                break;
            }
            case Between: {
                Found s = find_first(c.rest(), {kStart}, c.final);
                c.skip(s.at);
                if (s.which < 0) return;
                c.skip(kStart.size());
                st = Header;
                break;
            }
            }
        }
    }
};

}  // namespace

std::unique_ptr<Reader> make_harmony_reader() { return std::make_unique<HarmonyReader>(); }

}  // namespace ls::chat::detail
