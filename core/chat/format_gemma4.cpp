// Gemma 4: each call between <|tool_call> and <tool_call|>, its arguments in the template's
// own object syntax: keys bare, strings between <|"|> marks, no escapes:
//   <|tool_call>call:get_weather{city:<|"|>Paris<|"|>,days:3}<tool_call|>
// The arguments are turned into JSON and released when the call closes. Gemma 4's thought
// channel (<|channel>thought ... <channel|>) is ReplySplitter's and stays content here.
#include <optional>

#include "core/chat/format_impl.h"

namespace ls::chat::detail {
namespace {

using nlohmann::ordered_json;
constexpr std::string_view kOpen = "<|tool_call>", kClose = "<tool_call|>", kQuote = "<|\"|>";

struct GemmaValue {
    std::string_view s;
    size_t i = 0;

    void ws() { i = skip_ws(s, i); }
    std::optional<std::string> quoted() {  // at <|"|>
        size_t b = i + kQuote.size(), e = s.find(kQuote, b);
        if (e == npos) return std::nullopt;
        i = e + kQuote.size();
        return std::string(s.substr(b, e - b));
    }
    std::optional<ordered_json> value() {
        ws();
        if (i >= s.size()) return std::nullopt;
        if (s.substr(i, kQuote.size()) == kQuote) {
            auto q = quoted();
            if (!q) return std::nullopt;
            return ordered_json(*q);
        }
        if (s[i] == '{') {
            ordered_json o = ordered_json::object();
            ++i;
            ws();
            if (i < s.size() && s[i] == '}') return ++i, o;
            for (;;) {
                ws();
                std::string key;
                if (s.substr(i, kQuote.size()) == kQuote) {
                    auto q = quoted();
                    if (!q) return std::nullopt;
                    key = *q;
                } else {
                    size_t b = i;
                    while (i < s.size() && s[i] != ':' && s[i] != '}' && s[i] != ',') ++i;
                    key = std::string(s.substr(b, i - b));
                    while (!key.empty() && is_ws(key.back())) key.pop_back();
                }
                ws();
                if (key.empty() || i >= s.size() || s[i] != ':') return std::nullopt;
                ++i;
                auto v = value();
                if (!v) return std::nullopt;
                o[key] = std::move(*v);
                ws();
                if (i < s.size() && s[i] == ',') {
                    ++i;
                    continue;
                }
                if (i < s.size() && s[i] == '}') return ++i, o;
                return std::nullopt;
            }
        }
        if (s[i] == '[') {
            ordered_json a = ordered_json::array();
            ++i;
            ws();
            if (i < s.size() && s[i] == ']') return ++i, a;
            for (;;) {
                auto v = value();
                if (!v) return std::nullopt;
                a.push_back(std::move(*v));
                ws();
                if (i < s.size() && s[i] == ',') {
                    ++i;
                    continue;
                }
                if (i < s.size() && s[i] == ']') return ++i, a;
                return std::nullopt;
            }
        }
        size_t b = i;
        while (i < s.size() && s[i] != ',' && s[i] != '}' && s[i] != ']') ++i;
        std::string_view w = s.substr(b, i - b);
        while (!w.empty() && is_ws(w.back())) w.remove_suffix(1);
        auto j = ordered_json::parse(w, nullptr, false);
        if (!j.is_discarded() && !j.is_object() && !j.is_array()) return j;
        return ordered_json(std::string(w));  // a bare word: a string
    }
};

struct Gemma4Reader : Reader {
    enum { Text, Name, Args } st = Text;
    size_t mark = 0;

    void not_a_call(Ctx& c) {
        c.pos = mark;
        c.content(kOpen.size());
        st = Text;
    }

    void step(Ctx& c) override {
        for (;;) {
            if (c.error) return;
            switch (st) {
            case Text: {
                Found f = find_first(c.rest(), {kOpen}, c.final);
                c.content(f.at);
                if (f.which < 0) return;
                mark = c.pos;
                c.skip(kOpen.size());
                st = Name;
                break;
            }
            case Name: {
                std::string_view r = c.rest();
                int m = starts(r, "call:");
                if (m == 0 && !c.final) return;
                size_t b = 5, e = m == 1 ? r.find('{', b) : npos;
                if (m == 1 && e == npos && !c.final && r.size() < 256 && r.find('\n') == npos) return;
                std::string_view name = e == npos ? std::string_view() : r.substr(b, e - b);
                if (name.empty() || name.find_first_of(" \n<") != npos) {
                    not_a_call(c);
                    break;
                }
                c.begin_call(std::string(name));
                c.skip(e);
                st = Args;
                break;
            }
            case Args: {
                std::string_view r = c.rest();
                size_t e = r.find(kClose);
                if (e == npos && !c.final) return;
                std::string_view body = r.substr(0, e == npos ? r.size() : e);
                GemmaValue v{body};
                auto j = v.value();
                if (!j || !j->is_object() || skip_ws(body, v.i) != body.size())
                    return c.fail("tool call " + std::to_string(c.calls() - 1) + ": its arguments cannot be read");
                c.args(j->dump(-1, ' ', false, ordered_json::error_handler_t::replace));
                c.end_call();
                c.skip(e == npos ? r.size() : e + kClose.size());
                st = Text;
                break;
            }
            }
        }
    }
};

}  // namespace

std::unique_ptr<Reader> make_gemma4_reader() { return std::make_unique<Gemma4Reader>(); }

}  // namespace ls::chat::detail
