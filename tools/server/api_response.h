// OpenAI-style response bodies: whole responses, stream chunks, usage, logprobs and errors.
#pragma once
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/chat/tool_parse.h"
#include "core/text/tokenizer.h"
#include "tools/server/job.h"

namespace ls::server {

struct ResponseMeta {
    std::string id, model;
    int64_t created = 0;
    bool chat = false;
    bool logprobs = false;
};

// nlohmann::json::dump that never throws: bytes that are not UTF-8 (a token's piece may be
// part of a character) come out as U+FFFD.
std::string dump(const nlohmann::json& j);

nlohmann::json error_body(int status, const std::string& message, const std::string& type = "invalid_request_error",
                          const std::string& param = {}, const std::string& code = {});
nlohmann::json usage_json(const Usage& u);
// The logprobs object for these tokens; text_offset counts bytes of the reply before them.
nlohmann::json logprobs_json(const ResponseMeta& m, const std::vector<TokenOut>& tokens, const Tokenizer& tok, size_t text_offset);
// One choice of a whole answer, as the job's events built it.
struct ChoiceOut {
    std::string text, reasoning;
    std::vector<TokenOut> tokens;
    std::string finish;
    std::vector<chat::ToolCall> tool_calls;  // read from the reply (a chat with tools)
};
// A whole (non-streamed) response, choices in order.
// A chat's reasoning (a template that marks it: gpt-oss, Qwen 3 thinking) is the message's
// reasoning_content, as llama.cpp and vLLM report it; absent when there is none.
nlohmann::json full_response(const ResponseMeta& m, const std::vector<ChoiceOut>& choices, const Usage& u, const Tokenizer& tok);
// One stream chunk of choice `index`: a text delta (with its tokens' logprobs) and/or the
// finish reason. A choice's first chat chunk carries the assistant role.
nlohmann::json stream_chunk(const ResponseMeta& m, int index, const std::string& text, const std::vector<TokenOut>& tokens,
                            const std::string& finish, bool first, size_t text_offset, const Tokenizer& tok,
                            const std::string& reasoning = {});
// A chat stream chunk of choice `index` carrying tool-call deltas (OpenAI's shape: a call's
// first delta has its index, id, type and name; later ones add to its arguments).
nlohmann::json tool_calls_chunk(const ResponseMeta& m, int index, const nlohmann::json& calls, bool first);
// The last chunk of a stream with stream_options.include_usage: no choices, the usage.
nlohmann::json usage_chunk(const ResponseMeta& m, const Usage& u);

}  // namespace ls::server
