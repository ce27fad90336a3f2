#include "core/chat/tool_grammar.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <set>
#include <sstream>
#include <stdexcept>

#include "core/grammar/json_schema.h"

namespace ls::chat {

using nlohmann::ordered_json;

namespace {

// A GBNF string literal.
std::string lit(std::string_view s) {
    std::string o = "\"";
    for (char ch : s) {
        switch (ch) {
        case '"': o += "\\\""; break;
        case '\\': o += "\\\\"; break;
        case '\n': o += "\\n"; break;
        case '\r': o += "\\r"; break;
        case '\t': o += "\\t"; break;
        default: o += ch;
        }
    }
    return o + "\"";
}

std::string json_lit(const std::string& s) { return ordered_json(s).dump(-1, ' ', false, ordered_json::error_handler_t::replace); }

// The grammar being written: our rules, then the converter's, each name defined once.
struct Gbnf {
    std::vector<std::pair<std::string, std::string>> rules;  // name, body
    std::map<std::string, std::string> seen;                  // name -> whole definition
    std::string extra;

    void rule(const std::string& name, const std::string& body) { rules.emplace_back(name, body); }

    // Adds the converter's rules block by block (a block starts at "name ::="); a name it
    // defines again with the same text is skipped, with other text it is an error.
    void add_rules(const std::string& text) {
        std::istringstream in(text);
        std::string line, name, block;
        auto flush = [&] {
            if (name.empty()) {
                extra += block;
            } else if (auto it = seen.find(name); it == seen.end()) {
                seen[name] = block;
                extra += block;
            } else if (it->second != block) {
                throw std::invalid_argument("schema rules define \"" + name + "\" twice, differently");
            }
            block.clear();
            name.clear();
        };
        while (std::getline(in, line)) {
            size_t d = line.find("::=");
            bool head = d != std::string::npos && line.find_first_not_of(
                                                      "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_ ") >= d;
            if (head && !line.empty() && line[0] != ' ') {
                flush();
                name = line.substr(0, line.find_first_of(" :"));
            }
            block += line + "\n";
        }
        flush();
    }

    std::string text() const {
        std::string o;
        for (const auto& [n, b] : rules) o += n + " ::= " + b + "\n";
        return o + extra;
    }
};

// Parallel: one or more of `call`, apart by `sep`.
std::string repeat(const std::string& call, bool parallel, const std::string& sep) {
    return parallel ? call + " (" + sep + " " + call + ")*" : call;
}

const ordered_json* property_list(const ToolSpec& t) {
    const auto& p = t.parameters;
    if (p.is_object() && p.contains("properties") && p["properties"].is_object()) return &p["properties"];
    return nullptr;
}

bool required(const ToolSpec& t, const std::string& key) {
    const auto& p = t.parameters;
    if (!p.is_object() || !p.contains("required") || !p["required"].is_array()) return false;
    for (const auto& r : p["required"])
        if (r == key) return true;
    return false;
}

// The XML formats' arguments: each declared parameter as an element (required ones in
// order, optional ones may be left out), strings as text, other values as JSON.
std::string xml_args(Gbnf& g, Format f, const ToolSpec& t, size_t i, const SchemaRules& schema_rules) {
    const ordered_json* props = property_list(t);
    if (!props || props->empty()) return "\"\"";
    std::string seq;
    size_t j = 0;
    for (const auto& [key, schema] : props->items()) {
        std::string vrule = "tool-" + std::to_string(i) + "-arg-" + std::to_string(j++);
        bool is_string = schema.is_object() && schema.contains("type") && schema["type"] == "string";
        if (is_string) g.rule(vrule, "tc-xml-text");
        else g.add_rules(schema_rules(schema, vrule));
        std::string el;
        if (f == Format::Glm45) el = lit("<arg_key>" + key + "</arg_key>\n<arg_value>") + " " + vrule + " " + lit("</arg_value>\n");
        else el = lit("<parameter=" + key + ">\n") + " " + vrule + " " + lit("\n</parameter>\n");
        seq += (seq.empty() ? "" : " ") + (required(t, key) ? el : "(" + el + ")?");
    }
    return seq;
}

// Gemma 4's arguments, {key:value,...}: the declared parameters (required ones in order, then
// optional ones that may be left out), strings between <|"|> quotes (a string enum's values as
// its alternatives; maxLength kept, such a string without '<'), numbers, booleans and null as JSON writes them, anything
// else in Gemma's own value syntax. Without required parameters: any of its objects.
std::string gemma4_args(Gbnf& g, const ToolSpec& t, size_t i, const SchemaRules& schema_rules) {
    const ordered_json* props = property_list(t);
    if (!props || props->empty()) return "\"{}\"";
    std::string req, opt;
    size_t j = 0;
    for (const auto& [key, schema] : props->items()) {
        const std::string vrule = "tool-" + std::to_string(i) + "-arg-" + std::to_string(j++);
        const std::string q = "\"<|\\\"|>\"";  // the GBNF literal "<|\"|>"
        std::string body;
        if (schema.is_object() && schema.contains("enum") && schema["enum"].is_array() && !schema["enum"].empty()) {
            for (const auto& v : schema["enum"])
                body += (body.empty() ? "" : " | ") + (v.is_string() ? lit("<|\"|>" + v.get<std::string>() + "<|\"|>") : lit(v.dump()));
        } else if (schema.is_object() && schema.value("type", ordered_json()) == "string") {
            // (A length-limited string holds no '<': then each character counts one.)
            if (schema.contains("maxLength") && schema["maxLength"].is_number_unsigned())
                body = q + " [^<]{0," + std::to_string(schema["maxLength"].get<uint64_t>()) + "} " + q;
            else
                body = q + " ([^<] | \"<\" [^|])* " + q;
        } else if (schema.is_object() && schema.contains("type") && schema["type"].is_string() &&
                   (schema["type"] == "integer" || schema["type"] == "number" || schema["type"] == "boolean" || schema["type"] == "null")) {
            g.add_rules(schema_rules(schema, vrule + "-json"));
            body = vrule + "-json";
        } else {
            body = "tc-g-val";
        }
        g.rule(vrule, body);
        const std::string kv = lit(key + ":") + " " + vrule;
        if (required(t, key)) req += (req.empty() ? "" : " \",\" ") + kv;
        else opt += " (\",\" " + kv + ")?";
    }
    if (req.empty()) return "tc-g-obj";
    return "\"{\" " + req + opt + " \"}\"";
}

}  // namespace

// A JSON schema's grammar as rules of a larger one (a forced tool call's arguments): every
// rule the converter wrote is renamed under `name` (its root becomes `name` itself), so the
// rules of several schemas cannot collide. Names are renamed where GBNF has names: outside
// string literals, character classes and comments.
std::string schema_rules(const ordered_json& schema, const std::string& name) {
    const std::string g = grammar::json_schema_to_gbnf(schema);
    auto is_name = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_'; };
    std::set<std::string> defined;
    for (size_t at = 0; at < g.size();) {
        size_t eol = g.find('\n', at);
        if (eol == std::string::npos) eol = g.size();
        const std::string line = g.substr(at, eol - at);
        const size_t def = line.find("::=");
        if (def != std::string::npos) {
            size_t b = 0, e = def;
            while (b < e && std::isspace(static_cast<unsigned char>(line[b]))) ++b;
            while (e > b && std::isspace(static_cast<unsigned char>(line[e - 1]))) --e;
            if (e > b && std::all_of(line.begin() + std::ptrdiff_t(b), line.begin() + std::ptrdiff_t(e), is_name)) defined.insert(line.substr(b, e - b));
        }
        at = eol + 1;
    }
    std::string out;
    for (size_t i = 0; i < g.size();) {
        const char c = g[i];
        if (c == '"' || c == '[') {
            const char close = c == '"' ? '"' : ']';
            size_t j = i + 1;
            while (j < g.size() && g[j] != close) j += g[j] == '\\' ? 2 : 1;
            out.append(g, i, std::min(j + 1, g.size()) - i);
            i = j + 1;
        } else if (c == '#') {
            size_t j = g.find('\n', i);
            if (j == std::string::npos) j = g.size();
            out.append(g, i, j - i);
            i = j;
        } else if (is_name(c)) {
            size_t j = i;
            while (j < g.size() && is_name(g[j])) ++j;
            const std::string word = g.substr(i, j - i);
            out += !defined.count(word) ? word : word == "root" ? name : name + "-" + word;
            i = j;
        } else {
            out += c;
            ++i;
        }
    }
    return out;
}

std::string tool_call_gbnf(Format f, const std::vector<ToolSpec>& tools, bool parallel, const SchemaRules& schema_rules) {
    if (f == Format::None) throw std::invalid_argument("format \"none\" has no tool calls");
    if (tools.empty()) throw std::invalid_argument("no tools to call");
    Gbnf g;
    g.rule("root", "");  // filled in below, kept first
    g.rule("tc-ws", "[ \\t\\n]*");
    bool xml = f == Format::Qwen3Coder || f == Format::SeedOss || f == Format::Glm45;
    if (xml) g.rule("tc-xml-text", "([^<] | \"<\" [^/])*");
    if (f == Format::Gemma4) {
        g.rule("tc-g-str", "\"<|\\\"|>\" ([^<] | \"<\" [^|])* \"<|\\\"|>\"");
        g.rule("tc-g-val", "tc-g-str | tc-g-obj | \"[\" (tc-g-val (\",\" tc-g-val)*)? \"]\" | [-0-9.a-zA-Z_]+");
        g.rule("tc-g-obj", "\"{\" (tc-g-kv (\",\" tc-g-kv)*)? \"}\"");
        g.rule("tc-g-kv", "[a-zA-Z0-9_]+ \":\" tc-g-val");
    }
    std::string alts;
    for (size_t i = 0; i < tools.size(); ++i) {
        const ToolSpec& t = tools[i];
        std::string a = "tool-" + std::to_string(i) + "-args";
        if (!xml && f != Format::Gemma4) g.add_rules(schema_rules(t.parameters, a));
        std::string name_json = json_lit(t.name);
        std::string call;
        switch (f) {
        case Format::Hermes: call = lit("<tool_call>\n{\"name\": " + name_json + ", \"arguments\": ") + " " + a + " " + lit("}\n</tool_call>"); break;
        case Format::Qwen3Coder:
        case Format::SeedOss:
            call = lit(std::string(f == Format::SeedOss ? "<seed:tool_call>" : "<tool_call>") + "\n<function=" + t.name + ">\n") + " " +
                   xml_args(g, f, t, i, schema_rules) + " " + lit(f == Format::SeedOss ? "</function>\n</seed:tool_call>" : "</function>\n</tool_call>");
            break;
        case Format::Glm45: call = lit("<tool_call>" + t.name + "\n") + " " + xml_args(g, f, t, i, schema_rules) + " " + lit("</tool_call>"); break;
        case Format::Llama3: call = lit("{\"name\": " + name_json + ", \"parameters\": ") + " " + a + " \"}\""; break;
        case Format::MistralNemo:
            call = lit("{\"name\": " + name_json + ", \"arguments\": ") + " " + a + " " + lit(", \"id\": \"") + " [a-zA-Z0-9]{9} " + lit("\"}");
            break;
        case Format::Mistral: call = lit("[TOOL_CALLS]" + t.name + "[ARGS]") + " " + a; break;
        // (<|call|> ends generation: where it is a control token the call ends before it.)
        case Format::Harmony: call = lit("<|channel|>commentary to=functions." + t.name + " <|constrain|>json<|message|>") + " " + a + " " + lit("<|call|>") + "?"; break;
        case Format::Gemma4: call = lit("<|tool_call>call:" + t.name) + " " + gemma4_args(g, t, i, schema_rules) + " " + lit("<tool_call|>"); break;
        case Format::Generic:
        case Format::Granite:
        case Format::NemotronV2:
        case Format::Apriel:
        case Format::FireFunction: call = lit("{\"name\": " + name_json + ", \"arguments\": ") + " " + a + " \"}\""; break;
        case Format::CommandR7B:
            call = lit("{\"tool_call_id\": \"") + " [0-9]+ " + lit("\", \"tool_name\": " + name_json + ", \"parameters\": ") + " " + a + " \"}\"";
            break;
        case Format::DeepSeekR1:
            call = lit("<｜tool▁call▁begin｜>function<｜tool▁sep｜>" + t.name + "\n```json\n") + " " + a + " " + lit("\n```<｜tool▁call▁end｜>");
            break;
        case Format::DeepSeekV31: call = lit("<｜tool▁call▁begin｜>" + t.name + "<｜tool▁sep｜>") + " " + a + " " + lit("<｜tool▁call▁end｜>"); break;
        case Format::FunctionaryV31: call = lit("<function=" + t.name + ">") + " " + a + " " + lit("</function>"); break;
        case Format::FunctionaryV32: call = lit(t.name + "\n") + " " + a; break;
        case Format::KimiK2:
            call = lit("<|tool_call_begin|>functions." + t.name + ":") + " [0-9]+ " + lit("<|tool_call_argument_begin|>") + " " + a + " " + lit("<|tool_call_end|>");
            break;
        case Format::None: break;
        }
        std::string c = "tool-" + std::to_string(i) + "-call";
        g.rule(c, call);
        alts += (alts.empty() ? "" : " | ") + c;
    }
    g.rule("tc-call", alts);
    std::string root;
    switch (f) {
    case Format::Harmony:  // one call ends the turn; reasoning may come first
        g.rule("tc-analysis", "\"<|channel|>analysis<|message|>\" ([^<] | \"<\" [^|])* \"<|end|><|start|>assistant\"");
        root = "tc-analysis? tc-call";
        break;
    case Format::MistralNemo: root = "\"[TOOL_CALLS][\" " + repeat("tc-call", parallel, "\", \"") + " \"]\""; break;
    case Format::Granite: root = "\"<|tool_call|>[\" " + repeat("tc-call", parallel, "\", \"") + " \"]\""; break;
    case Format::NemotronV2: root = "\"<TOOLCALL>[\" " + repeat("tc-call", parallel, "\", \"") + " \"]</TOOLCALL>\""; break;
    case Format::Apriel: root = "\"<tool_calls>[\" " + repeat("tc-call", parallel, "\", \"") + " \"]</tool_calls>\""; break;
    case Format::FireFunction: root = "\" functools[\" " + repeat("tc-call", parallel, "\", \"") + " \"]\""; break;
    case Format::CommandR7B:
        g.rule("tc-thinking", "\"<|START_THINKING|>\" ([^<] | \"<\" [^|])* \"<|END_THINKING|>\"");
        root = "tc-thinking? \"<|START_ACTION|>[\\n    \" " + repeat("tc-call", parallel, "\",\\n    \"") + " \"\\n]<|END_ACTION|>\"";
        break;
    case Format::Generic:
        root = parallel ? "\"{\\\"tool_calls\\\": [\" " + repeat("tc-call", true, "\", \"") + " \"]}\"" : "\"{\\\"tool_call\\\": \" tc-call \"}\"";
        break;
    case Format::DeepSeekR1:
    case Format::DeepSeekV31: root = "\"<｜tool▁calls▁begin｜>\" " + repeat("tc-call", parallel, "\"\\n\"") + " \"<｜tool▁calls▁end｜>\""; break;
    case Format::KimiK2: root = "\"<|tool_calls_section_begin|>\" " + repeat("tc-call", parallel, "\"\"") + " \"<|tool_calls_section_end|>\""; break;
    case Format::FunctionaryV32: root = repeat("tc-call", parallel, "\">>>\""); break;
    case Format::Llama3: root = repeat("tc-call", parallel, "\"; \""); break;
    case Format::Mistral:
    case Format::Gemma4:
    case Format::FunctionaryV31: root = repeat("tc-call", parallel, "\"\""); break;
    default: root = repeat("tc-call", parallel, "\"\\n\""); break;
    }
    g.rules[0].second = root;
    return g.text();
}

CallTrigger call_trigger(Format f) {
    CallTrigger t;
    switch (f) {
    case Format::None: t.content_before_call = true; break;
    case Format::Generic:
        t.content_before_call = false;
        t.at_start = true;
        t.start_pattern = "\\{";
        break;
    case Format::Hermes:
    case Format::Qwen3Coder:
    case Format::Glm45: t.words = {"<tool_call>"}; break;
    case Format::SeedOss: t.words = {"<seed:tool_call>"}; break;
    case Format::Llama3:
        t.content_before_call = false;
        t.words = {"<|python_tag|>"};
        t.at_start = true;
        t.start_pattern = R"(\{\s*(?:"type"\s*:\s*"function"\s*,\s*)?"name"\s*:\s*")";
        break;
    case Format::MistralNemo:
    case Format::Mistral: t.words = {"[TOOL_CALLS]"}; break;
    case Format::Harmony: t.words = {"<|channel|>commentary to=functions.", " to=functions."}; break;
    case Format::Gemma4: t.words = {"<|tool_call>"}; break;
    case Format::DeepSeekR1:
    case Format::DeepSeekV31: t.words = {"<｜tool▁calls▁begin｜>", "<｜tool▁call▁begin｜>"}; break;
    case Format::Granite: t.words = {"<|tool_call|>"}; break;
    case Format::NemotronV2: t.words = {"<TOOLCALL>"}; break;
    case Format::Apriel: t.words = {"<tool_calls>"}; break;
    case Format::FireFunction: t.words = {" functools[", "functools["}; break;
    case Format::CommandR7B: t.words = {"<|START_ACTION|>"}; break;
    case Format::FunctionaryV31: t.words = {"<function=", "<|python_tag|>"}; break;
    case Format::FunctionaryV32:
        t.words = {">>>"};
        t.at_start = true;
        t.start_pattern = R"((?!all\n)[A-Za-z0-9_.-]+\n)";
        break;
    case Format::KimiK2: t.words = {"<|tool_calls_section_begin|>", "<|tool_call_begin|>"}; break;
    }
    return t;
}

}  // namespace ls::chat
