// Chat templates: a conversation rendered with the model's own Jinja template, and the
// tool calls of a reply read in its format (core/chat), as the server does.
#include <cstring>
#include <nlohmann/json.hpp>

#include "api/handles.h"
#include "core/chat/reply_reader.h"
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
        const chat::ChatFormat f = chat::ChatFormat::from_model(m.gguf(), *m.tok, m.hp().arch,
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

// A reply as the message JSON lockstep_chat_parse and lockstep_reply_reader_message give:
// content (null when there are calls and no text), reasoning_content where any, tool_calls;
// with `error`, the text as written, no calls, and the reason.
nlohmann::ordered_json message_json(const chat::Message& msg, const std::string* error, const std::string& raw) {
    nlohmann::ordered_json out, calls = nlohmann::ordered_json::array();
    if (error) {
        out["content"] = raw;
        if (!msg.reasoning.empty()) out["reasoning_content"] = msg.reasoning;
        out["tool_calls"] = std::move(calls);
        out["error"] = *error;
        return out;
    }
    for (const chat::ToolCall& c : msg.tool_calls)
        calls.push_back({{"id", c.id}, {"type", "function"}, {"function", {{"name", c.name}, {"arguments", c.arguments}}}});
    if (msg.content.empty() && !calls.empty()) out["content"] = nullptr;
    else out["content"] = msg.content;
    if (!msg.reasoning.empty()) out["reasoning_content"] = msg.reasoning;
    out["tool_calls"] = std::move(calls);
    return out;
}

// A chat::Event as the OpenAI chat delta it becomes (the server's stream chunks).
nlohmann::ordered_json delta_of(const chat::Event& e) {
    switch (e.kind) {
        case chat::Event::Content: return {{"content", e.text}};
        case chat::Event::Reasoning: return {{"reasoning_content", e.text}};
        case chat::Event::CallStart:
            return {{"tool_calls", nlohmann::ordered_json::array({{{"index", e.index},
                                                                   {"id", e.id},
                                                                   {"type", "function"},
                                                                   {"function", {{"name", e.name}, {"arguments", ""}}}}})}};
        case chat::Event::CallArgs:
            return {{"tool_calls", nlohmann::ordered_json::array({{{"index", e.index}, {"function", {{"arguments", e.text}}}}})}};
    }
    return nullptr;
}

}  // namespace
}  // namespace ls::capi

// The reader of a reply and what it keeps: the model's state (tokenizer, its chat format), a
// format made from the caller's template, the deltas not yet taken and the whole message.
struct lockstep_reply_reader {
    std::shared_ptr<ls::capi::ModelState> m;
    std::unique_ptr<ls::chat::ChatFormat> own_format;  // template_source / template_name
    std::unique_ptr<ls::chat::ReplyReader> r;
    nlohmann::ordered_json pending = nlohmann::ordered_json::array();
    ls::chat::Message message;
    bool finished = false;
    void add(std::vector<ls::chat::Event>&& evs) {
        for (ls::chat::Event& e : evs) {
            // Adjacent text of one kind in one delta, as the server's chunks join it.
            const nlohmann::ordered_json d = ls::capi::delta_of(e);
            const char* key = e.kind == ls::chat::Event::Content ? "content" : e.kind == ls::chat::Event::Reasoning ? "reasoning_content" : nullptr;
            if (key && !pending.empty() && pending.back().size() == 1 && pending.back().contains(key))
                pending.back()[key] = pending.back()[key].get<std::string>() + e.text;
            else
                pending.push_back(d);
            message.apply(e);
        }
    }
};

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
            // (a whole reply's own reasoning channel is not kept when its call broke)
            out = message_json(err ? chat::Message{} : msg, err ? &err->message : nullptr, std::string(reply));
        });
        put_json(out, buf, buf_len, n_out);
    });
}

LOCKSTEP_API int lockstep_reply_reader_new(const lockstep_model* model, const lockstep_chat_params* params, int32_t read_tools,
                                          const char* stops_json, const char* call_id_prefix, lockstep_reply_reader** reader) {
    return guarded("lockstep_reply_reader_new", [&] {
        need(reader, "reader");
        *reader = nullptr;
        const ModelState& m = *need(model, "model")->m;
        need(params, "params");
        auto h = std::make_unique<lockstep_reply_reader>();
        h->m = model->m;
        const chat::ChatFormat* f = &m.chat_format();
        if (params->template_source || params->template_name) {
            h->own_format = std::make_unique<chat::ChatFormat>(chat::ChatFormat::from_model(
                m.gguf(), *m.tok, m.hp().arch, params->template_source ? params->template_source : "",
                params->template_name ? params->template_name : ""));
            f = h->own_format.get();
        }
        chat::ReplyReaderOptions o;
        o.reasoning = &f->builtin();
        if (read_tools) {
            o.tools = reply_format(*f);
            o.parser.tools = declared_tools(*params);
            const std::string prefix = call_id_prefix ? call_id_prefix : "call_";
            o.parser.make_id = [prefix](size_t i) { return prefix + std::to_string(i); };
            // Harmony's calls live in its channel headers, which the reasoning splitter would
            // take apart: its tool parser splits the reply itself (as the server does).
            if (o.tools == chat::Format::Harmony) o.reasoning = nullptr;
        }
        if (stops_json) {
            const nlohmann::ordered_json st = parse_json(stops_json, "stops_json");
            if (!st.is_array()) throw Error(LOCKSTEP_ERR_INVALID_ARGUMENT, "stops_json is not a JSON array");
            for (const auto& x : st) {
                if (!x.is_string()) throw Error(LOCKSTEP_ERR_INVALID_ARGUMENT, "stops_json: a stop is not a string");
                if (!x.get<std::string>().empty()) o.stops.push_back(x.get<std::string>());
            }
        }
        h->r = std::make_unique<chat::ReplyReader>(*m.tok, std::move(o));
        *reader = h.release();
    });
}

LOCKSTEP_API int lockstep_reply_reader_push(lockstep_reply_reader* reader, int32_t token, int32_t* stopped) {
    return guarded("lockstep_reply_reader_push", [&] {
        need(reader, "reader");
        if (stopped) *stopped = 0;
        check_token(*reader->m, token);
        if (reader->finished) throw Error(LOCKSTEP_ERR_INVALID_ARGUMENT, "the reply was finished");
        reader->add(reader->r->push(token));
        if (stopped) *stopped = reader->r->stopped() ? 1 : 0;
    });
}

LOCKSTEP_API int lockstep_reply_reader_finish(lockstep_reply_reader* reader) {
    return guarded("lockstep_reply_reader_finish", [&] {
        need(reader, "reader");
        if (reader->finished) return;
        reader->finished = true;
        reader->add(reader->r->finish());
    });
}

LOCKSTEP_API int lockstep_reply_reader_take(lockstep_reply_reader* reader, char* buf, size_t buf_len, size_t* n_out) {
    return guarded("lockstep_reply_reader_take", [&] {
        need(reader, "reader");
        need(n_out, "n_out");
        *n_out = 0;
        put_json(reader->pending, buf, buf_len, n_out);  // (throws BUFFER_TOO_SMALL, keeping them)
        reader->pending = nlohmann::ordered_json::array();
    });
}

LOCKSTEP_API int lockstep_reply_reader_message(lockstep_reply_reader* reader, char* buf, size_t buf_len, size_t* n_out) {
    return guarded("lockstep_reply_reader_message", [&] {
        need(reader, "reader");
        need(n_out, "n_out");
        *n_out = 0;
        if (!reader->finished) throw Error(LOCKSTEP_ERR_INVALID_ARGUMENT, "the reply is not finished (lockstep_reply_reader_finish)");
        const auto& err = reader->r->error();
        const std::string why = err ? "the model's tool call " + std::to_string(err->call_index) + " is malformed: " + err->message : "";
        put_json(message_json(reader->message, err ? &why : nullptr, reader->r->text()), buf, buf_len, n_out);
    });
}

LOCKSTEP_API void lockstep_reply_reader_free(lockstep_reply_reader* reader) { delete reader; }

}  // extern "C"
