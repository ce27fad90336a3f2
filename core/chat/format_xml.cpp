// Formats that write each argument as an XML element, its value as plain text:
//   Qwen3-Coder / Qwen3.5 / Nemotron 3 Nano / Step 3.5:
//       <tool_call>
//       <function=get_weather>
//       <parameter=city>
//       Paris
//       </parameter>
//       </function>
//       </tool_call>
//   Seed-OSS: the same between <seed:tool_call> and </seed:tool_call>
//   GLM 4.5 / 4.6 / 4.7, Laguna:
//       <tool_call>get_weather
//       <arg_key>city</arg_key>
//       <arg_value>Paris</arg_value>
//       </tool_call>
// A value becomes JSON by its declared type (ParserOptions::tools), else as JSON where it reads
// as JSON (numbers, true, objects..), else as a string; the newline that opens and the one
// that closes a Qwen value are not part of it. Each argument is released when its element
// closes.
#include "core/chat/format_impl.h"

namespace ls::chat::detail {
namespace {

struct XmlSpec {
    std::string_view open, close;
    std::string_view fn_open, fn_name_end, fn_close;  // fn_open empty: the name follows open
    std::string_view key_open, key_end, val_open, val_close;
    bool trim_newlines = true;
};

XmlSpec spec_for(Format f) {
    if (f == Format::Glm45)
        return {"<tool_call>", "</tool_call>", "", "", "", "<arg_key>", "</arg_key>", "<arg_value>", "</arg_value>", false};
    XmlSpec s{"<tool_call>", "</tool_call>", "<function=", ">", "</function>", "<parameter=", ">", "", "</parameter>", true};
    if (f == Format::SeedOss) {
        s.open = "<seed:tool_call>";
        s.close = "</seed:tool_call>";
    }
    return s;
}

struct XmlReader : Reader {
    XmlSpec s;
    enum { Text, Fn, Params, Close } st = Text;
    size_t mark = 0, nparams = 0;
    const ToolSpec* tool = nullptr;

    explicit XmlReader(Format f) : s(spec_for(f)) {}

    void not_a_call(Ctx& c) {
        c.pos = mark;
        c.content(s.open.size());
        st = Text;
    }
    void bad(Ctx& c, const char* what) {
        c.fail("tool call " + std::to_string(c.calls() - 1) + ": " + what);
    }

    // The function's name; false while more text is needed (or it was not a call).
    bool read_name(Ctx& c) {
        std::string_view r = c.rest();
        size_t i = skip_ws(r);
        if (i == r.size() && !c.final) return false;
        size_t b, e;
        if (!s.fn_open.empty()) {
            int m = starts(r.substr(i), s.fn_open);
            if (m == 0 && !c.final) return false;
            if (m != 1) return not_a_call(c), false;
            b = i + s.fn_open.size();
            e = r.find(s.fn_name_end, b);
            if (e == npos) {
                if (c.final || r.find('\n', b) != npos || r.size() - b > 256) not_a_call(c);
                return false;
            }
            c.skip(e + s.fn_name_end.size());
        } else {  // GLM: the name runs to a newline, the first argument or the closer
            b = i;
            e = r.find_first_of("\n<", b);
            if (e == npos) {
                if (c.final || r.size() - b > 256) not_a_call(c);
                return false;
            }
            c.skip(e);
        }
        std::string name(r.substr(b, e - b));
        while (!name.empty() && is_ws(name.back())) name.pop_back();
        if (name.empty()) {
            c.pos = mark + s.open.size();  // undo the skip
            not_a_call(c);
            return false;
        }
        c.begin_call(name);
        tool = c.tool(name);
        nparams = 0;
        return true;
    }

    // One argument element; 1 read, 0 more text needed, -1 not an argument.
    int read_param(Ctx& c) {
        std::string_view r = c.rest();
        size_t i = skip_ws(r);
        int m = starts(r.substr(i), s.key_open);
        if (m <= 0) return m;
        size_t kb = i + s.key_open.size();
        size_t ke = r.find(s.key_end, kb);
        if (ke == npos) return c.final ? -1 : 0;
        size_t vb = ke + s.key_end.size();
        if (!s.val_open.empty()) {
            vb = skip_ws(r, vb);
            int v = starts(r.substr(vb), s.val_open);
            if (v == 0) return c.final ? -1 : 0;
            if (v < 0) return -1;
            vb += s.val_open.size();
        }
        size_t ve = r.find(s.val_close, vb);
        if (ve == npos) return c.final ? -1 : 0;
        std::string key(r.substr(kb, ke - kb));
        std::string_view value = r.substr(vb, ve - vb);
        if (s.trim_newlines) {
            if (!value.empty() && value.front() == '\n') value.remove_prefix(1);
            if (!value.empty() && value.back() == '\n') value.remove_suffix(1);
        }
        const nlohmann::ordered_json* prop = nullptr;
        if (tool) {
            const auto& p = tool->parameters;
            if (p.contains("properties") && p["properties"].is_object() && p["properties"].contains(key))
                prop = &p["properties"][key];
        }
        std::string text = nparams++ ? ", " : "{";
        text += nlohmann::ordered_json(key).dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
        text += ": ";
        text += xml_value_json(value, prop);
        c.args(text);
        c.skip(ve + s.val_close.size());
        return 1;
    }

    // A closer (the function's or the block's) at the front; 1, 0 more needed, -1 none.
    int take(Ctx& c, std::string_view closer) {
        std::string_view r = c.rest();
        size_t i = skip_ws(r);
        if (closer.empty()) return -1;
        int m = starts(r.substr(i), closer);
        if (m == 1) c.skip(i + closer.size());
        if (m == 0 && c.final) return -1;
        return m;
    }

    void end(Ctx& c) {
        if (nparams) c.args("}");
        c.end_call();
    }

    void step(Ctx& c) override {
        for (;;) {
            if (c.error) return;
            switch (st) {
            case Text: {
                Found f = find_first(c.rest(), {s.open}, c.final);
                c.content(f.at);
                if (f.which < 0) return;
                mark = c.pos;
                c.skip(s.open.size());
                st = Fn;
                break;
            }
            case Fn:
                if (!read_name(c)) {
                    if (st == Fn) return;
                    break;
                }
                st = Params;
                break;
            case Params: {
                int p = read_param(c);
                if (p == 1) break;
                if (p == 0) return;
                int f = take(c, s.fn_close);
                if (f == 0) return;
                if (f == 1) {
                    st = Close;
                    break;
                }
                int k = take(c, s.close);
                if (k == 0) return;
                if (k == 1 || (c.final && skip_ws(c.rest()) == c.rest().size())) {
                    end(c);
                    st = Text;
                    break;
                }
                return bad(c, "unexpected text among its arguments");
            }
            case Close: {
                int k = take(c, s.close);
                if (k == 0) return;
                end(c);  // a missing block closer is forgiven
                st = Text;
                break;
            }
            }
        }
    }
};

}  // namespace

std::unique_ptr<Reader> make_xml_reader(Format f) { return std::make_unique<XmlReader>(f); }

}  // namespace ls::chat::detail
