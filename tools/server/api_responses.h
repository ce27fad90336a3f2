// OpenAI's Responses API (POST /v1/responses), its stateless form: a request is rewritten as
// the chat completion it asks for (input items → messages, instructions → a system message,
// text.format → response_format, flat function tools → chat tools), served as one, and the
// chat answer is written back in the Responses shape — output items (reasoning, message,
// function_call), whole or as the Responses stream's typed events. Nothing is stored:
// previous_response_id and background are refused.
#pragma once
#include <nlohmann/json.hpp>
#include <string>

namespace ls::server {

// The chat completion body for a Responses body; throws ApiError 400 naming the Responses
// field that is wrong or not supported.
nlohmann::json responses_to_chat(const nlohmann::json& body);
// The Responses field an error about chat field `param` is about (max_tokens → max_output_tokens).
std::string responses_param(const std::string& chat_param);

struct ResponsesMeta {
    std::string id, model;
    int64_t created = 0;
    nlohmann::json request;  // the Responses body: the response echoes its settings
};

// A whole chat completion (full_response's shape) as a Response object.
nlohmann::json chat_to_response(const ResponsesMeta& m, const nlohmann::json& chat);

// The Responses stream: fed each chat stream chunk (and the usage chunk, or an error body),
// writes the typed SSE events; end() writes the closing events and response.completed.
class ResponsesStream {
public:
    explicit ResponsesStream(ResponsesMeta m);
    std::string chunk(const nlohmann::json& chat_chunk);
    std::string end();

private:
    ResponsesMeta m_;
    int seq_ = 0;
    bool started_ = false;
    std::string finish_;
    nlohmann::json usage_;
    nlohmann::json items_ = nlohmann::json::array();  // the output so far, each as done
    // The item being written: -1 none; its kind ("reasoning", "message", "function_call").
    int open_ = -1;
    std::string open_kind_;
    int open_call_ = -1;  // the chat tool-call index of an open function_call
    std::string event(const char* type, nlohmann::json payload);
    std::string open_item(const std::string& kind, const nlohmann::json& call = {});
    std::string close_item();
    nlohmann::json response(const char* status) const;
};

}  // namespace ls::server
