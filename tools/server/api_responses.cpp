#include "tools/server/api_responses.h"

#include <set>

#include "tools/server/api_request.h"
#include "tools/server/api_response.h"

namespace ls::server {

using nlohmann::json;

namespace {

ApiError bad(const std::string& message, const std::string& param) { return ApiError(400, message, param); }

// A message's content: a string, or its parts as the chat API's text parts.
json content_of(const json& c, const std::string& where) {
    if (c.is_string()) return c;
    if (!c.is_array()) throw bad(where + ": 'content' must be a string or an array of parts", "input");
    json parts = json::array();
    for (const json& p : c) {
        const std::string type = p.is_object() && p.contains("type") && p["type"].is_string() ? p["type"].get<std::string>() : "";
        if (type == "input_text" || type == "output_text" || type == "text") {
            if (!p.contains("text") || !p["text"].is_string()) throw bad(where + ": a '" + type + "' part without a text", "input");
            parts.push_back({{"type", "text"}, {"text", p["text"]}});
        } else if (type == "input_image") {
            // {"type": "input_image", "image_url": "data:..."}: the chat API's image_url part
            // (a file_id would need stored files, which this stateless server keeps none of).
            if (!p.contains("image_url") || !p["image_url"].is_string())
                throw bad(where + ": an 'input_image' part needs an 'image_url' (a data: URL; file_id is not supported)", "input");
            parts.push_back({{"type", "image_url"}, {"image_url", {{"url", p["image_url"]}}}});
        } else {
            throw bad(where + ": content parts of type '" + type + "' are not supported (input_text, input_image)", "input");
        }
    }
    return parts;
}

const std::string* str_field(const json& item, const char* key) {
    auto it = item.find(key);
    return it != item.end() && it->is_string() ? &it->get_ref<const std::string&>() : nullptr;
}

void add_items(json& messages, const json& input) {
    for (size_t i = 0; i < input.size(); ++i) {
        const json& item = input[i];
        const std::string where = "input[" + std::to_string(i) + "]";
        if (!item.is_object()) throw bad(where + " is not an object", "input");
        const std::string* type = str_field(item, "type");
        if (!type || *type == "message") {
            const std::string* role = str_field(item, "role");
            if (!role) throw bad(where + ": a message needs a 'role'", "input");
            if (*role != "user" && *role != "assistant" && *role != "system" && *role != "developer")
                throw bad(where + ": unknown role '" + *role + "'", "input");
            if (!item.contains("content")) throw bad(where + ": a message needs 'content'", "input");
            messages.push_back({{"role", *role == "developer" ? "system" : *role}, {"content", content_of(item["content"], where)}});
        } else if (*type == "function_call") {
            const std::string *id = str_field(item, "call_id"), *name = str_field(item, "name"), *args = str_field(item, "arguments");
            if (!id || !name || !args) throw bad(where + ": a function_call needs 'call_id', 'name' and 'arguments' strings", "input");
            json call = {{"id", *id}, {"type", "function"}, {"function", {{"name", *name}, {"arguments", *args}}}};
            // Calls in a row are one assistant turn's calls.
            if (!messages.empty() && messages.back()["role"] == "assistant" && messages.back().contains("tool_calls"))
                messages.back()["tool_calls"].push_back(call);
            else
                messages.push_back({{"role", "assistant"}, {"content", nullptr}, {"tool_calls", json::array({call})}});
        } else if (*type == "function_call_output") {
            const std::string* id = str_field(item, "call_id");
            if (!id || !item.contains("output")) throw bad(where + ": a function_call_output needs 'call_id' and 'output'", "input");
            messages.push_back({{"role", "tool"}, {"tool_call_id", *id}, {"content", content_of(item["output"], where)}});
        } else if (*type == "reasoning") {
            // A reasoning item handed back: the templates drop earlier turns' reasoning anyway.
        } else {
            throw bad(where + ": items of type '" + *type + "' are not supported (message, function_call, "
                      "function_call_output, reasoning)", "input");
        }
    }
}

// Fields of the stateless Responses API this server reads or accepts; anything else is refused
// by name rather than ignored.
const std::set<std::string> kKnown = {"model", "input", "instructions", "max_output_tokens", "temperature", "top_p", "seed",
                                      "stream", "tools", "tool_choice", "parallel_tool_calls", "text", "reasoning", "store",
                                      "metadata", "user", "truncation", "previous_response_id", "background", "include",
                                      "service_tier", "safety_identifier", "prompt_cache_key"};

}  // namespace

json responses_to_chat(const json& body) {
    for (const auto& [key, v] : body.items())
        if (!kKnown.count(key)) throw ApiError(400, "'" + key + "' is not supported by this server's /v1/responses", key, "unsupported_parameter");
    auto set = [&](const char* key) { return body.contains(key) && !body[key].is_null(); };
    if (set("previous_response_id"))
        throw ApiError(400, "'previous_response_id': responses are not stored; send the whole conversation as 'input'",
                       "previous_response_id", "unsupported_parameter");
    if (set("background") && body["background"] != false)
        throw ApiError(400, "'background' responses are not supported", "background", "unsupported_parameter");
    if (set("include") && !(body["include"].is_array() && body["include"].empty()))
        throw ApiError(400, "'include' (extra output data) is not supported", "include", "unsupported_parameter");
    if (set("truncation") && body["truncation"] != "disabled")
        throw ApiError(400, "'truncation' must be \"disabled\": a conversation longer than the context is refused, never cut",
                       "truncation", "unsupported_parameter");

    json chat = json::object();
    for (const char* key : {"model", "temperature", "top_p", "seed", "stream", "parallel_tool_calls", "tool_choice"})
        if (body.contains(key)) chat[key] = body[key];
    if (body.contains("max_output_tokens")) chat["max_tokens"] = body["max_output_tokens"];

    json messages = json::array();
    if (set("instructions")) {
        if (!body["instructions"].is_string()) throw bad("'instructions' must be a string", "instructions");
        messages.push_back({{"role", "system"}, {"content", body["instructions"]}});
    }
    if (!body.contains("input")) throw bad("'input' is required", "input");
    const json& input = body["input"];
    if (input.is_string())
        messages.push_back({{"role", "user"}, {"content", input}});
    else if (input.is_array())
        add_items(messages, input);
    else
        throw bad("'input' must be a string or an array of items", "input");
    chat["messages"] = std::move(messages);

    if (set("tools")) {
        if (!body["tools"].is_array()) throw bad("'tools' must be an array", "tools");
        json tools = json::array();
        for (const json& t : body["tools"]) {
            if (!t.is_object() || t.value("type", "") != "function")
                throw bad("only function tools are supported ({\"type\": \"function\", \"name\": ...})", "tools");
            json fn = json::object();
            for (const char* key : {"name", "description", "parameters", "strict"})
                if (t.contains(key)) fn[key] = t[key];
            tools.push_back({{"type", "function"}, {"function", fn}});
        }
        chat["tools"] = std::move(tools);
    }
    // {"type": "function", "name": X} names one function; the chat API nests the name.
    if (chat.contains("tool_choice") && chat["tool_choice"].is_object() && chat["tool_choice"].contains("name"))
        chat["tool_choice"] = {{"type", chat["tool_choice"].value("type", "")}, {"function", {{"name", chat["tool_choice"]["name"]}}}};

    if (set("text")) {
        const json& text = body["text"];
        if (!text.is_object()) throw bad("'text' must be an object", "text");
        if (text.contains("format")) {
            const json& f = text["format"];
            const std::string type = f.is_object() ? f.value("type", "") : "";
            if (type == "json_object") {
                chat["response_format"] = {{"type", "json_object"}};
            } else if (type == "json_schema") {
                json js = json::object();
                for (const char* key : {"name", "schema", "strict", "description"})
                    if (f.contains(key)) js[key] = f[key];
                chat["response_format"] = {{"type", "json_schema"}, {"json_schema", js}};
            } else if (type != "text") {
                throw bad("'text.format' must be of type text, json_object or json_schema", "text.format");
            }
        }
    }
    // gpt-oss's template reads the effort; other templates ignore it.
    if (set("reasoning") && body["reasoning"].is_object() && body["reasoning"].contains("effort") && body["reasoning"]["effort"].is_string())
        chat["chat_template_kwargs"] = {{"reasoning_effort", body["reasoning"]["effort"]}};
    return chat;
}

std::string responses_param(const std::string& p) {
    if (p == "max_tokens") return "max_output_tokens";
    if (p == "messages") return "input";
    if (p == "response_format" || p == "json_schema") return "text.format";
    if (p == "chat_template_kwargs") return "reasoning";
    return p;
}

namespace {

std::string suffix(const std::string& id) { return id.substr(id.find('_') + 1); }

json usage_of(const json& u) {
    if (!u.is_object()) return nullptr;
    const int64_t in = u.value("prompt_tokens", int64_t(0)), out = u.value("completion_tokens", int64_t(0));
    int64_t cached = 0;
    if (u.contains("prompt_tokens_details")) cached = u["prompt_tokens_details"].value("cached_tokens", int64_t(0));
    return {{"input_tokens", in}, {"input_tokens_details", {{"cached_tokens", cached}}}, {"output_tokens", out},
            {"output_tokens_details", {{"reasoning_tokens", 0}}}, {"total_tokens", in + out}};
}

json base(const ResponsesMeta& m, const char* status) {
    const json& r = m.request;
    auto echo = [&](const char* key, json dflt) { return r.contains(key) && !r[key].is_null() ? r[key] : dflt; };
    return {{"id", m.id}, {"object", "response"}, {"created_at", m.created}, {"status", status}, {"model", m.model},
            {"output", json::array()}, {"error", nullptr}, {"incomplete_details", nullptr},
            {"instructions", echo("instructions", nullptr)}, {"max_output_tokens", echo("max_output_tokens", nullptr)},
            {"parallel_tool_calls", echo("parallel_tool_calls", true)}, {"temperature", echo("temperature", 1.0)},
            {"top_p", echo("top_p", 1.0)}, {"tool_choice", echo("tool_choice", "auto")}, {"tools", echo("tools", json::array())},
            {"text", echo("text", {{"format", {{"type", "text"}}}})}, {"reasoning", echo("reasoning", nullptr)},
            {"store", false}, {"truncation", "disabled"}, {"metadata", echo("metadata", json::object())},
            {"previous_response_id", nullptr}, {"usage", nullptr}};
}

json finished(json r, const std::string& finish, json usage) {
    if (finish == "length") {
        r["status"] = "incomplete";
        r["incomplete_details"] = {{"reason", "max_output_tokens"}};
    } else {
        r["status"] = "completed";
    }
    r["usage"] = std::move(usage);
    return r;
}

json message_item(const std::string& id, const std::string& text, const char* status) {
    json content = json::array();
    if (status == std::string("completed")) content.push_back({{"type", "output_text"}, {"text", text}, {"annotations", json::array()}});
    return {{"id", id}, {"type", "message"}, {"status", status}, {"role", "assistant"}, {"content", content}};
}

json reasoning_item(const std::string& id, const std::string& text) {
    json content = json::array();
    if (!text.empty()) content.push_back({{"type", "reasoning_text"}, {"text", text}});
    return {{"id", id}, {"type", "reasoning"}, {"summary", json::array()}, {"content", content}};
}

json call_item(const std::string& call_id, const std::string& name, const std::string& args, const char* status) {
    return {{"id", "fc_" + call_id}, {"type", "function_call"}, {"status", status}, {"call_id", call_id}, {"name", name}, {"arguments", args}};
}

}  // namespace

json chat_to_response(const ResponsesMeta& m, const json& chat) {
    const json& choice = chat["choices"][0];
    const json& msg = choice["message"];
    json r = base(m, "completed");
    const std::string s = suffix(m.id);
    if (msg.contains("reasoning_content") && msg["reasoning_content"].is_string())
        r["output"].push_back(reasoning_item("rs_" + s, msg["reasoning_content"]));
    const bool calls = msg.contains("tool_calls") && msg["tool_calls"].is_array() && !msg["tool_calls"].empty();
    const std::string text = msg.contains("content") && msg["content"].is_string() ? msg["content"].get<std::string>() : "";
    if (!text.empty() || !calls) r["output"].push_back(message_item("msg_" + s, text, "completed"));
    if (calls)
        for (const json& c : msg["tool_calls"])
            r["output"].push_back(call_item(c["id"], c["function"]["name"], c["function"]["arguments"], "completed"));
    return finished(std::move(r), choice.value("finish_reason", ""), usage_of(chat.value("usage", json(nullptr))));
}

ResponsesStream::ResponsesStream(ResponsesMeta m) : m_(std::move(m)) {}

std::string ResponsesStream::event(const char* type, json payload) {
    payload["type"] = type;
    payload["sequence_number"] = seq_++;
    return std::string("event: ") + type + "\ndata: " + dump(payload) + "\n\n";
}

json ResponsesStream::response(const char* status) const {
    json r = base(m_, status);
    r["output"] = items_;
    return r;
}

std::string ResponsesStream::open_item(const std::string& kind, const json& call) {
    std::string out = close_item();
    const std::string s = suffix(m_.id) + "_" + std::to_string(items_.size());
    json item = kind == "message" ? message_item("msg_" + s, "", "in_progress")
              : kind == "reasoning" ? reasoning_item("rs_" + s, "")
                                    : call_item(call["id"], call["function"]["name"], "", "in_progress");
    open_ = int(items_.size());
    open_kind_ = kind;
    items_.push_back(item);
    out += event("response.output_item.added", {{"output_index", open_}, {"item", item}});
    if (kind == "message")
        out += event("response.content_part.added", {{"item_id", item["id"]}, {"output_index", open_}, {"content_index", 0},
                                                     {"part", {{"type", "output_text"}, {"text", ""}, {"annotations", json::array()}}}});
    return out;
}

std::string ResponsesStream::close_item() {
    if (open_ < 0) return "";
    json& item = items_[size_t(open_)];
    std::string out;
    const json id = item["id"];
    if (open_kind_ == "message") {
        const std::string text = item["content"].empty() ? "" : item["content"][0]["text"].get<std::string>();
        item = message_item(id, text, "completed");
        out += event("response.output_text.done", {{"item_id", id}, {"output_index", open_}, {"content_index", 0}, {"text", text}});
        out += event("response.content_part.done", {{"item_id", id}, {"output_index", open_}, {"content_index", 0}, {"part", item["content"][0]}});
    } else if (open_kind_ == "reasoning") {
        const std::string text = item["content"].empty() ? "" : item["content"][0]["text"].get<std::string>();
        out += event("response.reasoning_text.done", {{"item_id", id}, {"output_index", open_}, {"content_index", 0}, {"text", text}});
    } else {
        item["status"] = "completed";
        out += event("response.function_call_arguments.done", {{"item_id", id}, {"output_index", open_}, {"arguments", item["arguments"]}});
    }
    out += event("response.output_item.done", {{"output_index", open_}, {"item", item}});
    open_ = -1;
    open_kind_.clear();
    open_call_ = -1;
    return out;
}

std::string ResponsesStream::chunk(const json& c) {
    std::string out;
    if (!started_) {
        started_ = true;
        out += event("response.created", {{"response", response("in_progress")}});
        out += event("response.in_progress", {{"response", response("in_progress")}});
    }
    if (c.contains("error")) {  // the job failed after the stream began: the stream ends here
        const json& e = c["error"];
        out += close_item();
        out += event("error", {{"code", e.value("type", "server_error")}, {"message", e.value("message", "")}, {"param", nullptr}});
        json r = response("failed");
        r["error"] = {{"code", "server_error"}, {"message", e.value("message", "")}};
        return out + event("response.failed", {{"response", r}});
    }
    if (c.contains("usage") && !c["usage"].is_null()) usage_ = usage_of(c["usage"]);
    if (!c.contains("choices")) return out;
    for (const json& ch : c["choices"]) {
        const json& d = ch.value("delta", json::object());
        auto text_delta = [&](const char* key, const char* kind, const char* type) {
            if (!d.contains(key) || !d[key].is_string() || d[key].get_ref<const std::string&>().empty()) return;
            if (open_kind_ != kind) out += open_item(kind);
            json& item = items_[size_t(open_)];
            if (item["content"].empty()) item["content"].push_back({{"type", std::string(kind) == "message" ? "output_text" : "reasoning_text"}, {"text", ""}});
            item["content"][0]["text"] = item["content"][0]["text"].get<std::string>() + d[key].get<std::string>();
            out += event(type, {{"item_id", item["id"]}, {"output_index", open_}, {"content_index", 0}, {"delta", d[key]}});
        };
        text_delta("reasoning_content", "reasoning", "response.reasoning_text.delta");
        text_delta("content", "message", "response.output_text.delta");
        if (d.contains("tool_calls"))
            for (const json& call : d["tool_calls"]) {
                const int index = call.value("index", 0);
                if (call.contains("id")) {
                    out += open_item("function_call", call);
                    open_call_ = index;
                }
                if (open_kind_ != "function_call" || open_call_ != index) continue;  // (deltas follow their call's start)
                const std::string args = call.contains("function") ? call["function"].value("arguments", "") : "";
                if (args.empty()) continue;
                json& item = items_[size_t(open_)];
                item["arguments"] = item["arguments"].get<std::string>() + args;
                out += event("response.function_call_arguments.delta", {{"item_id", item["id"]}, {"output_index", open_}, {"delta", args}});
            }
        if (ch.contains("finish_reason") && ch["finish_reason"].is_string()) finish_ = ch["finish_reason"];
    }
    return out;
}

std::string ResponsesStream::end() {
    std::string out = close_item();
    if (items_.empty()) {  // nothing was said: one empty message, as a whole response has
        out += open_item("message");
        out += close_item();
    }
    json r = finished(response("completed"), finish_, usage_);
    return out + event(r["status"] == "incomplete" ? "response.incomplete" : "response.completed", {{"response", r}});
}

}  // namespace ls::server
