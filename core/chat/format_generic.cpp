// Generic (llama.cpp's format for templates that render no tools, e.g. Gemma 3, Phi 3.5): the
// system prompt (generic_tool_prompt) asks the model to answer with one JSON object,
//   {"tool_calls": [{"name": "get_weather", "arguments": {"city": "Paris"}, "id": "0"}]}
//   {"tool_call": {"name": "get_weather", "arguments": {"city": "Paris"}}}   (not parallel)
//   {"response": "It is sunny."}
// The object is read when it closes (nothing of it is streamed before); a reply that is not
// such an object is content, as written.
#include "core/chat/format_impl.h"

namespace ls::chat::detail {
namespace {

using nlohmann::ordered_json;

struct GenericReader : Reader {
    enum { Start, Json, Text } st = Start;
    JsonScan val;

    static std::string dump(const ordered_json& j) { return j.dump(-1, ' ', false, ordered_json::error_handler_t::replace); }

    static bool call(Ctx& c, const ordered_json& t) {
        if (!t.is_object() || !t.contains("name") || !t["name"].is_string()) return false;
        std::string id;
        if (t.contains("id") && t["id"].is_string()) id = t["id"].get<std::string>();
        c.begin_call(t["name"].get<std::string>(), id);
        if (t.contains("arguments")) {
            const ordered_json& a = t["arguments"];
            c.args(a.is_string() ? a.get<std::string>() : dump(a));
        }
        c.end_call();
        return true;
    }

    // The reply's object as calls or a response; false: it is neither.
    static bool read(Ctx& c, std::string_view text) {
        auto j = ordered_json::parse(text, nullptr, false);
        if (j.is_discarded() || !j.is_object()) return false;
        if (j.contains("tool_calls") && j["tool_calls"].is_array()) {
            for (const auto& t : j["tool_calls"])
                if (!t.is_object() || !t.contains("name")) return false;
            for (const auto& t : j["tool_calls"]) call(c, t);
            return true;
        }
        if (j.contains("tool_call") && j["tool_call"].is_object() && j["tool_call"].contains("name"))
            return call(c, j["tool_call"]);
        if (j.contains("response")) {
            const ordered_json& r = j["response"];
            c.content_text(r.is_string() ? r.get<std::string>() : dump(r));
            return true;
        }
        return false;
    }

    void step(Ctx& c) override {
        for (;;) {
            switch (st) {
            case Start: {
                size_t i = skip_ws(c.rest());
                if (i == c.rest().size() && !c.final) return;
                if (i < c.rest().size() && c.rest()[i] == '{') {
                    val = JsonScan(c.pos);
                    st = Json;
                } else {
                    st = Text;
                }
                break;
            }
            case Json: {
                if (!val.scan(c.buf, c.final)) {
                    if (!c.final && !val.bad) return;
                    st = Text;
                    break;
                }
                size_t len = val.end - c.pos;
                if (read(c, c.rest().substr(0, len))) c.skip(len);
                st = Text;
                break;
            }
            case Text: c.content(c.rest().size()); return;
            }
        }
    }
};

}  // namespace

std::unique_ptr<Reader> make_generic_reader() { return std::make_unique<GenericReader>(); }

}  // namespace ls::chat::detail
