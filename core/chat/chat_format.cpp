#include "core/chat/chat_format.h"

#include <ctime>

#include "core/chat/tool_prompt.h"
#include "core/gguf/gguf.h"
#include "core/jinja/template.h"
#include "core/jinja/value.h"

namespace ls::chat {

using nlohmann::ordered_json;

ChatFormat::ChatFormat(ChatFormat&&) noexcept = default;
ChatFormat::~ChatFormat() = default;

ChatFormat ChatFormat::from_model(const GgufFile& f, const Tokenizer& tok, const std::string& arch, const std::string& override_source,
                                  const std::string& name) {
    ChatFormat c;
    if (!override_source.empty()) {
        c.source_ = override_source;
    } else if (!name.empty()) {
        const std::string key = "tokenizer.chat_template." + name;
        if (!f.find(key)) throw std::invalid_argument("the model file has no chat template named '" + name + "' (" + key + ")");
        c.source_ = f.get_string(key);
    } else {
        c.source_ = f.get_string("tokenizer.chat_template", "");
    }
    c.builtin_ = &chat_template_for(arch, [&](std::string_view t) { return tok.find_token(t) >= 0; });
    if (!c.source_.empty()) {
        try {
            c.jinja_ = std::make_unique<jinja::Template>(c.source_);
        } catch (const jinja::Error& e) {
            throw TemplateError(e.what());
        }
    }
    c.tool_format_ = detect_format(c.source_, arch);
    if (tok.bos() >= 0) c.bos_ = tok.token_text(tok.bos());
    if (tok.eos() >= 0) c.eos_ = tok.token_text(tok.eos());
    return c;
}

bool ChatFormat::starts_with_bos(const std::string& text) const { return !bos_.empty() && text.rfind(bos_, 0) == 0; }

namespace {

std::string text_of(const ordered_json& content) {
    if (content.is_string()) return content.get<std::string>();
    std::string s;
    if (content.is_array())
        for (const ordered_json& p : content)
            if (p.is_object() && p.contains("text") && p["text"].is_string()) s += p["text"].get<std::string>();
    return s;
}

// The messages as templates expect them (what transformers' apply_chat_template gets from
// the clients that call it): text parts joined into one string, and a tool call's arguments
// as an object where the client sent them as a JSON string (templates write them with tojson).
ordered_json for_template(const ordered_json& messages) {
    ordered_json out = ordered_json::array();
    for (const ordered_json& m : messages) {
        ordered_json c = m;
        if (c.contains("content") && c["content"].is_array()) c["content"] = text_of(c["content"]);
        if (c.contains("tool_calls") && c["tool_calls"].is_array())
            for (ordered_json& call : c["tool_calls"]) {
                ordered_json* fn = call.contains("function") && call["function"].is_object() ? &call["function"] : &call;
                if (fn->contains("arguments") && (*fn)["arguments"].is_string()) {
                    ordered_json parsed = ordered_json::parse((*fn)["arguments"].get<std::string>(), nullptr, false);
                    if (!parsed.is_discarded()) (*fn)["arguments"] = std::move(parsed);
                }
            }
        out.push_back(std::move(c));
    }
    return out;
}

// Generic tool calling (templates that render no tools): the tools in a system message, the
// assistant's calls and the tools' results as the JSON the model was asked to write and read.
ordered_json generic_history(const ordered_json& messages, const ordered_json& tools, bool parallel) {
    ordered_json out = ordered_json::array();
    std::string prompt = generic_tool_prompt(tools_from_json(tools), parallel);
    size_t first = 0;
    if (!messages.empty() && messages[0].value("role", "") == "system") {
        prompt = text_of(messages[0].value("content", ordered_json(""))) + "\n\n" + prompt;
        first = 1;
    }
    out.push_back({{"role", "system"}, {"content", prompt}});
    for (size_t i = first; i < messages.size(); ++i) {
        const ordered_json& m = messages[i];
        const std::string role = m.value("role", "");
        if (role == "assistant" && m.contains("tool_calls") && m["tool_calls"].is_array() && !m["tool_calls"].empty()) {
            ordered_json calls = ordered_json::array();
            for (const ordered_json& call : m["tool_calls"]) {
                const ordered_json& fn = call.contains("function") ? call["function"] : call;
                ordered_json args = fn.value("arguments", ordered_json::object());
                if (args.is_string()) {
                    ordered_json parsed = ordered_json::parse(args.get<std::string>(), nullptr, false);
                    if (!parsed.is_discarded()) args = std::move(parsed);
                }
                ordered_json c = {{"name", fn.value("name", "")}, {"arguments", args}};
                if (call.contains("id")) c["id"] = call["id"];
                calls.push_back(std::move(c));
            }
            const ordered_json reply = parallel ? ordered_json{{"tool_calls", calls}} : ordered_json{{"tool_call", calls[0]}};
            out.push_back({{"role", "assistant"}, {"content", reply.dump(-1, ' ', false, ordered_json::error_handler_t::replace)}});
        } else if (role == "tool") {
            ordered_json r = {{"tool_response", {{"content", text_of(m.value("content", ordered_json("")))}}}};
            if (m.contains("name")) r["tool_response"]["tool"] = m["name"];
            if (m.contains("tool_call_id")) r["tool_response"]["tool_call_id"] = m["tool_call_id"];
            out.push_back({{"role", "user"}, {"content", r.dump(-1, ' ', false, ordered_json::error_handler_t::replace)}});
        } else {
            out.push_back(m);
        }
    }
    return out;
}

// What a template may refuse that a conversation still means, and the form it is given again
// in (as llama.cpp's template polyfills do): an assistant message of calls without content
// (templates that concatenate or test message.content: content ""), calls' arguments as the
// client's JSON string (templates that concatenate them: DeepSeek R1's), a system message
// (templates that raise on one: Gemma 2's; it goes before the first user message's text).
constexpr unsigned kEmptyContent = 1, kStringArguments = 2, kNoSystem = 4;

// The messages (for_template's) adapted; `changed` says whether any adaptation applied.
ordered_json adapted(const ordered_json& messages, const ordered_json& original, unsigned how, bool& changed) {
    ordered_json out = messages;
    changed = false;
    for (size_t i = 0; i < out.size(); ++i) {
        ordered_json& m = out[i];
        if ((how & kEmptyContent) && m.value("role", "") == "assistant" && (!m.contains("content") || m["content"].is_null())) {
            m["content"] = "";
            changed = true;
        }
        if ((how & kStringArguments) && m.contains("tool_calls") && m["tool_calls"].is_array() && i < original.size() &&
            original[i].contains("tool_calls") && original[i]["tool_calls"].is_array())
            for (size_t k = 0; k < m["tool_calls"].size() && k < original[i]["tool_calls"].size(); ++k) {
                ordered_json& call = m["tool_calls"][k];
                const ordered_json& was = original[i]["tool_calls"][k];
                ordered_json* fn = call.contains("function") && call["function"].is_object() ? &call["function"] : &call;
                const ordered_json* wfn = was.contains("function") && was["function"].is_object() ? &was["function"] : &was;
                if (fn->contains("arguments") && !(*fn)["arguments"].is_string()) {
                    (*fn)["arguments"] = wfn->contains("arguments") && (*wfn)["arguments"].is_string()
                                             ? (*wfn)["arguments"]
                                             : ordered_json((*fn)["arguments"].dump(-1, ' ', false, ordered_json::error_handler_t::replace));
                    changed = true;
                }
            }
    }
    if ((how & kNoSystem) && !out.empty() && out[0].value("role", "") == "system") {
        const std::string sys = text_of(out[0].value("content", ordered_json("")));
        out.erase(out.begin());
        bool put = false;
        for (ordered_json& m : out)
            if (m.value("role", "") == "user") {
                m["content"] = sys + "\n\n" + text_of(m.value("content", ordered_json("")));
                put = true;
                break;
            }
        if (!put) out.insert(out.begin(), ordered_json{{"role", "user"}, {"content", sys}});
        changed = true;
    }
    return out;
}

}  // namespace

std::string ChatFormat::render(const ChatInput& in) const {
    const bool tools = in.tools.is_array() && !in.tools.empty();
    bool has_tool_messages = false;
    for (const ordered_json& m : in.messages) has_tool_messages = has_tool_messages || m.value("role", "") == "tool" || m.contains("tool_calls");
    if (!jinja_) {
        // The built-in table knows plain conversations: tools go in as the Generic format's
        // system prompt, calls and results as its JSON.
        const ordered_json msgs_in = tools || has_tool_messages ? generic_history(in.messages, tools ? in.tools : ordered_json::array(), in.parallel_tool_calls)
                                                                : in.messages;
        std::vector<ChatMsg> msgs;
        for (const ordered_json& m : msgs_in) msgs.push_back({m.value("role", ""), text_of(m.value("content", ordered_json("")))});
        return format_chat(msgs, in.add_generation_prompt, *builtin_, in.builtin);
    }
    ordered_json ctx = ordered_json::object();
    for (const auto& [k, v] : in.kwargs.items()) ctx[k] = v;
    const bool generic = tool_format_ == Format::Generic || tool_format_ == Format::None;
    const bool parallel = in.parallel_tool_calls;
    const ordered_json original = generic && (tools || has_tool_messages)
                                      ? generic_history(in.messages, tools ? in.tools : ordered_json::array(), parallel)
                                      : in.messages;
    const ordered_json messages = for_template(original);
    ctx["messages"] = messages;
    if (tools && !generic) ctx["tools"] = in.tools;
    ctx["add_generation_prompt"] = in.add_generation_prompt;
    ctx["bos_token"] = bos_;
    ctx["eos_token"] = eos_;
    try {
        return jinja_->render(jinja::from_json(ctx));
    } catch (const jinja::Error& e) {
        // The template refused the conversation as it came: the adapted forms, fewest changes
        // first; its first error where none renders.
        for (unsigned how : {kEmptyContent, kStringArguments, kEmptyContent | kStringArguments, kNoSystem,
                             kNoSystem | kEmptyContent, kNoSystem | kStringArguments, kNoSystem | kEmptyContent | kStringArguments}) {
            bool changed = false;
            ordered_json again = adapted(messages, original, how, changed);
            // (A combination whose every part applies; a part that changes nothing was tried.)
            bool all = changed;
            for (unsigned part : {kEmptyContent, kStringArguments, kNoSystem})
                if ((how & part) && how != part) {
                    bool c = false;
                    adapted(messages, original, part, c);
                    all = all && c;
                }
            if (!all) continue;
            ctx["messages"] = std::move(again);
            try {
                return jinja_->render(jinja::from_json(ctx));
            } catch (const jinja::Error&) {
            }
        }
        throw TemplateError(e.what());
    }
}

}  // namespace ls::chat
