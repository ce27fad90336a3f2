// OpenAI-style request bodies → what the engine runs. Every check a client can fail is made
// here, before anything is queued: malformed JSON, a wrong type, a value out of range, a prompt
// longer than a slot's context, more choices than slots. Each throws ApiError, which the HTTP layer
// turns into an OpenAI-style {"error": {...}} with its status.
#pragma once
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>

#include "core/chat/chat_format.h"
#include "core/text/tokenizer.h"
#include "tools/server/job.h"

namespace ls::server {

struct ApiError : std::runtime_error {
    ApiError(int status_, const std::string& message_, std::string param_ = {}, std::string code_ = {},
             std::string type_ = "invalid_request_error")
        : std::runtime_error(message_), status(status_), message(message_), type(std::move(type_)), param(std::move(param_)),
          code(std::move(code_)) {}
    int status;
    // The whole message (what() is a C string: it would end at a NUL the client sent).
    std::string message;
    std::string type, param, code;
};

// What a request needs besides its body: the tokenizer, the model's architecture (its chat
// template) and a slot's context.
struct ApiContext {
    const Tokenizer* tok = nullptr;
    std::string arch;
    const ChatTemplate* chat = nullptr;  // the template for arch and this vocabulary (null: by arch alone)
    const chat::ChatFormat* format = nullptr;  // the model's chat format (its Jinja template): chats render with it
    int64_t n_ctx = 0;
    int n_slots = 1;  // the most choices (n) a request may ask for
    SamplerParams defaults;  // the server's sampling flags (--temp, --top-k, ...): what a request leaves out
    std::vector<int32_t> eog_ids;  // the end-of-generation tokens (banned by ignore_eos)
    size_t max_piece_bytes = 0;    // Tokenizer::max_bytes_per_token: bounds a prompt's tokens by its bytes (0: no bound)
    std::shared_ptr<const grammar::TokenMask> grammar_vocab;  // the vocabulary's texts, for constrained output
    // The same with the tool-call format's control-token markers as their text (forced calls).
    std::shared_ptr<const grammar::TokenMask> tool_grammar_vocab;
    // The projector (--mmproj): chats may hold images (image_url parts); null: they may not.
    const VisionEncoder* vision = nullptr;
    // Encode a request's images here, on its own thread, before it is queued (the projector has
    // a backend of its own): the engine finds their rows kept by the encoder.
    bool encode_images = false;
    image::Limits image_limits;
};

struct GenRequest {
    JobParams job;
    bool chat = false;
    bool stream = false, include_usage = false;
    bool logprobs = false;
    int top_logprobs = 0;
    std::string echo;  // completions with echo: the prompt's text, before each choice's
    // Chat with tools the model may call: the reply is read for calls in this format.
    chat::Format tool_format = chat::Format::None;
    std::vector<chat::ToolSpec> tools;
    bool parallel_tool_calls = true;
};

// Deeper JSON is refused (no request needs more than a few levels: messages, content parts,
// tool schemas).
constexpr int kMaxJsonDepth = 64;
// Parses a body as a JSON object; throws ApiError 400 naming the problem.
nlohmann::json parse_json_object(const std::string& body);
// POST /v1/completions and POST /v1/chat/completions.
GenRequest parse_completion(const nlohmann::json& body, const ApiContext& ctx);
GenRequest parse_chat(const nlohmann::json& body, const ApiContext& ctx);

}  // namespace ls::server
