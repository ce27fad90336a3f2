// Reads a model's reply, streamed in pieces of text (special tokens rendered, whole UTF-8
// characters: feed it what StopText releases), into what an OpenAI client sees: content,
// reasoning (where the format itself has a reasoning channel: harmony's analysis, Command-R7B's
// thinking; <think> blocks are ReplySplitter's) and tool calls, each announced once (index, id,
// name) and then given its arguments in pieces. Text that may be the start of a call marker is
// held back until the next piece shows what it is, so streamed content never shows half a
// marker; the events of a reply pushed in any split, joined, are those of the whole reply.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/chat/tool_format.h"

namespace ls::chat {

struct Event {
    enum Kind : uint8_t {
        Content,    // text: visible reply text
        Reasoning,  // text: reasoning text
        CallStart,  // index, id, name: a new tool call (indices count from 0 in reply order)
        CallArgs,   // index, text: more of that call's arguments (JSON text)
    };
    Kind kind = Content;
    std::string text;
    size_t index = 0;
    std::string id, name;
    bool operator==(const Event&) const = default;
};

struct ToolCall {
    std::string id, name, arguments;
    bool operator==(const ToolCall&) const = default;
};

// A whole reply, as the events build it.
struct Message {
    std::string content, reasoning;
    std::vector<ToolCall> tool_calls;
    void apply(const Event& e);
    void apply(const std::vector<Event>& es) {
        for (const Event& e : es) apply(e);
    }
    bool operator==(const Message&) const = default;
};

// The reply broke the format after a call was announced: arguments that are not JSON, or a
// call that never ended. The server answers a whole (non-streamed) request with an error
// (like llama-server, which fails a reply it cannot parse rather than hand a client a broken
// call), and ends a stream with an error event; raw_text() is the reply as written.
struct ParseError {
    std::string message;
    size_t call_index = 0;
};

using MakeCallId = std::function<std::string(size_t index)>;

struct ParserOptions {
    // The id of the call with this index where the format gives none; derive it from the
    // request (its seed), never at random, so an answer is the same bytes whatever else is
    // served. Unset: "call_<index>".
    MakeCallId make_id;
    // The declared tools: lets XML formats type their parameter values by the schema (a
    // string parameter stays a string even when it reads "42"), and lets Llama 3 tell a bare
    // JSON answer from a call.
    std::vector<ToolSpec> tools;
};

class ToolCallParser {
public:
    explicit ToolCallParser(Format f, ParserOptions opt = {});
    ~ToolCallParser();
    ToolCallParser(ToolCallParser&&) noexcept;
    ToolCallParser& operator=(ToolCallParser&&) noexcept;

    // The next piece of the reply; returns what it releases (adjacent text of one kind
    // joined).
    std::vector<Event> push(std::string_view piece);
    // The reply ended: releases what was held back and checks every call's arguments (parsed
    // with nlohmann); see error().
    std::vector<Event> finish();
    const std::optional<ParseError>& error() const;
    // Everything pushed so far.
    const std::string& raw_text() const;
    Format format() const;

    struct Impl;

private:
    std::unique_ptr<Impl> impl_;
};

// Whole-reply convenience: push(text) + finish(), built into a Message.
Message parse_reply(Format f, std::string_view text, ParserOptions opt = {}, std::optional<ParseError>* error = nullptr);

}  // namespace ls::chat
