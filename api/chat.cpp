// Chat templates: a conversation rendered with the model's own Jinja template, and the
// tool calls of a reply read in its format (core/chat), as the server does.
#include <cstring>
#include <nlohmann/json.hpp>

#include "api/handles.h"
#include "core/chat/tool_grammar.h"
#include "core/chat/tool_parse.h"

namespace ls::capi {
namespace {

nlohmann::ordered_json parse_json(const char* text, const char* what) {
    try {
        return nlohmann::ordered_json::parse(text);
    } catch (const nlohmann::json::exception& e) {
        throw Error(LOCKSTEP_ERR_INVALID_ARGUMENT, std::string(what) + " is not JSON: " + e.what());
    }
}

// Runs fn(format) with the chat format params picks: the model's own (made once), or one of
// the caller's source or the file's named templates.
template <class F>
void with_format(const ModelState& m, const lockstep_chat_params& params, F&& fn) {
    if (params.template_source || params.template_name) {
        const chat::ChatFormat f = chat::ChatFormat::from_model(m.model().gguf(), *m.tok, m.hp().arch,
                                                                params.template_source ? params.template_source : "",
                                                                params.template_name ? params.template_name : "");
        fn(f);
    } else {
        fn(m.chat_format());
    }
}

// The format a reply's calls are read in: the template's, Generic where it takes no tools
// (the server's rule: the model is then told the generic JSON reply).
chat::Format reply_format(const chat::ChatFormat& f) {
    return f.tool_format() == chat::Format::None ? chat::Format::Generic : f.tool_format();
}

// params->tools_json as the declared tools (none for NULL).
std::vector<chat::ToolSpec> declared_tools(const lockstep_chat_params& params) {
    if (!params.tools_json) return {};
    try {
        return chat::tools_from_json(parse_json(params.tools_json, "tools_json"));
    } catch (const std::invalid_argument& e) {
        throw Error(LOCKSTEP_ERR_INVALID_ARGUMENT, std::string("tools_json: ") + e.what());
    }
}

void put_json(const nlohmann::ordered_json& j, char* buf, size_t buf_len, size_t* n_out) {
    const std::string text = j.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
    put_bytes(text.data(), text.size(), buf, buf_len, n_out);
}

}  // namespace
}  // namespace ls::capi

using namespace ls;
using namespace ls::capi;

extern "C" {

LOCKSTEP_API lockstep_chat_params lockstep_chat_default_params(void) {
    lockstep_chat_params p;
    std::memset(&p, 0, sizeof p);
    p.add_generation_prompt = 1;
    return p;
}

LOCKSTEP_API int lockstep_chat_render(const lockstep_model* model, const lockstep_chat_params* params, char* buf, size_t buf_len, size_t* n_out,
                                      int32_t* add_bos) {
    return guarded("lockstep_chat_render", [&] {
        const ModelState& m = *need(model, "model")->m;
        need(params, "params");
        need(n_out, "n_out");
        *n_out = 0;
        if (add_bos) *add_bos = 0;
        chat::ChatInput in;
        in.messages = parse_json(need(params->messages_json, "params->messages_json"), "messages_json");
        if (!in.messages.is_array()) throw Error(LOCKSTEP_ERR_INVALID_ARGUMENT, "messages_json is not a JSON array");
        if (params->tools_json) {
            in.tools = parse_json(params->tools_json, "tools_json");
            if (!in.tools.is_array() && !in.tools.is_null()) throw Error(LOCKSTEP_ERR_INVALID_ARGUMENT, "tools_json is not a JSON array");
        }
        if (params->kwargs_json) {
            in.kwargs = parse_json(params->kwargs_json, "kwargs_json");
            if (!in.kwargs.is_object()) throw Error(LOCKSTEP_ERR_INVALID_ARGUMENT, "kwargs_json is not a JSON object");
        }
        in.add_generation_prompt = params->add_generation_prompt != 0;
        std::string text;
        bool bos_in_text = false;
        with_format(m, *params, [&](const chat::ChatFormat& f) {
            text = f.render(in);
            bos_in_text = f.starts_with_bos(text);
        });
        if (add_bos) *add_bos = m.tok->add_bos_default() && !bos_in_text ? 1 : 0;
        put_bytes(text.data(), text.size(), buf, buf_len, n_out);
    });
}

LOCKSTEP_API int lockstep_chat_tool_format(const lockstep_model* model, const lockstep_chat_params* params, char* buf, size_t buf_len,
                                           size_t* n_out) {
    return guarded("lockstep_chat_tool_format", [&] {
        const ModelState& m = *need(model, "model")->m;
        need(params, "params");
        need(n_out, "n_out");
        *n_out = 0;
        nlohmann::ordered_json out;
        with_format(m, *params, [&](const chat::ChatFormat& f) {
            const chat::Format fmt = reply_format(f);
            nlohmann::ordered_json markers = nlohmann::ordered_json::array(), ids = nlohmann::ordered_json::array();
            for (std::string_view mk : chat::format_markers(fmt)) {
                markers.push_back(std::string(mk));
                const int32_t id = m.tok->find_token(mk);
                if (id >= 0 && m.tok->token_type(id) == TokenType::Control) ids.push_back(id);
            }
            out["format"] = std::string(chat::format_name(fmt));
            out["markers"] = std::move(markers);
            out["marker_tokens"] = std::move(ids);
            out["gives_ids"] = chat::format_gives_ids(fmt);
        });
        put_json(out, buf, buf_len, n_out);
    });
}

LOCKSTEP_API int lockstep_chat_tool_grammar(const lockstep_model* model, const lockstep_chat_params* params, const char* function_name,
                                            int32_t parallel, char* buf, size_t buf_len, size_t* n_out) {
    return guarded("lockstep_chat_tool_grammar", [&] {
        const ModelState& m = *need(model, "model")->m;
        need(params, "params");
        need(n_out, "n_out");
        *n_out = 0;
        const std::vector<chat::ToolSpec> tools = declared_tools(*params);
        if (tools.empty()) throw Error(LOCKSTEP_ERR_INVALID_ARGUMENT, "a forced tool call needs tools (params->tools_json)");
        std::vector<chat::ToolSpec> allowed;
        for (const chat::ToolSpec& t : tools)
            if (!function_name || t.name == function_name) allowed.push_back(t);
        if (allowed.empty()) throw Error(LOCKSTEP_ERR_INVALID_ARGUMENT, std::string("no tool is named '") + function_name + "'");
        std::string gbnf;
        with_format(m, *params, [&](const chat::ChatFormat& f) {
            gbnf = chat::tool_call_gbnf(reply_format(f), allowed, parallel != 0 && !function_name, chat::schema_rules);
        });
        put_bytes(gbnf.data(), gbnf.size(), buf, buf_len, n_out);
    });
}

LOCKSTEP_API int lockstep_chat_parse(const lockstep_model* model, const lockstep_chat_params* params, const char* text, size_t text_len, char* buf,
                                     size_t buf_len, size_t* n_out) {
    return guarded("lockstep_chat_parse", [&] {
        const ModelState& m = *need(model, "model")->m;
        need(params, "params");
        need(n_out, "n_out");
        *n_out = 0;
        if (text_len > 0) need(text, "text");
        const std::string_view reply(text ? text : "", text_len);
        chat::ParserOptions opt;
        opt.tools = declared_tools(*params);
        nlohmann::ordered_json out;
        with_format(m, *params, [&](const chat::ChatFormat& f) {
            std::optional<chat::ParseError> err;
            const chat::Message msg = chat::parse_reply(reply_format(f), reply, opt, &err);
            nlohmann::ordered_json calls = nlohmann::ordered_json::array();
            if (err) {
                out["content"] = std::string(reply);
                out["tool_calls"] = std::move(calls);
                out["error"] = err->message;
                return;
            }
            for (const chat::ToolCall& c : msg.tool_calls)
                calls.push_back({{"id", c.id}, {"type", "function"}, {"function", {{"name", c.name}, {"arguments", c.arguments}}}});
            if (msg.content.empty() && !calls.empty()) out["content"] = nullptr;
            else out["content"] = msg.content;
            if (!msg.reasoning.empty()) out["reasoning_content"] = msg.reasoning;
            out["tool_calls"] = std::move(calls);
        });
        put_json(out, buf, buf_len, n_out);
    });
}

}  // extern "C"
