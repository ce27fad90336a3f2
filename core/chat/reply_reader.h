// A chat reply read token by token into what an OpenAI client sees, by the server's pipeline:
// each token's text (control tokens only where they are markers: reasoning markers, tool-call
// markers), the reasoning split off by the template's markers (ReplySplitter), stop strings
// (StopText, on the visible text only, as the server applies them), then the tool calls of
// the format read out of what remains (ToolCallParser). For front ends that generate without
// the server's engine (the C API's lockstep_reply_reader, and through it the Python Llama),
// so that their streamed and whole replies split reasoning, stop and read calls as the
// server's do.
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/chat/tool_parse.h"
#include "core/text/chat_template.h"
#include "core/text/stop_text.h"
#include "core/text/tokenizer.h"
#include "core/text/utf8.h"

namespace ls::chat {

struct ReplyReaderOptions {
    // The template whose reply markers split reasoning off (null, or one without markers:
    // none is split). Harmony's channels are the tool parser's, so give null with it.
    const ChatTemplate* reasoning = nullptr;
    // The tool-call format read out of the visible text (None: the text is content).
    Format tools = Format::None;
    ParserOptions parser;
    std::vector<std::string> stops;
};

class ReplyReader {
public:
    ReplyReader(const Tokenizer& tok, ReplyReaderOptions o);
    // The next generated token (end-of-generation tokens are not pushed); returns the events
    // it releases: reasoning before the content of the same token, calls in order. Nothing
    // more once stopped().
    std::vector<Event> push(int32_t token);
    // The reply ended (end of generation, length, a stop): releases what is held back.
    std::vector<Event> finish();
    // A stop string matched: the text ends before it.
    bool stopped() const { return text_.stopped(); }
    // The tool parser's verdict after finish(): a call that broke the format.
    const std::optional<ParseError>& error() const;
    // The visible text released so far (stops cut), before the calls were read out of it.
    const std::string& text() const { return visible_; }

private:
    const Tokenizer* tok_;
    ReplyReaderOptions o_;
    std::vector<std::string> markers_;  // the tool format's markers, whose control tokens give their text
    std::optional<ReplySplitter> split_;
    Utf8Stream reasoning_utf8_;
    StopText text_;
    std::unique_ptr<ToolCallParser> calls_;
    std::string visible_;
    bool finished_ = false;
    void release(const std::string& reasoning, const std::string& text, std::vector<Event>& out);
};

}  // namespace ls::chat
