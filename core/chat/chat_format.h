// A model's chat format: its own Jinja template (the GGUF's tokenizer.chat_template, or a
// file the user names), rendered with Hugging Face's conventions, or, for a file without one,
// the built-in description of its family (core/text/chat_template.h). Also which tool-call
// format its replies use (tool_format.h).
#pragma once
#include <memory>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>

#include "core/chat/tool_format.h"
#include "core/text/chat_template.h"
#include "core/text/tokenizer.h"

namespace ls {
class GgufFile;
}
namespace ls::jinja {
class Template;
}

namespace ls::chat {

// A conversation as OpenAI's API gives it, and what the template may be told besides.
struct ChatInput {
    nlohmann::ordered_json messages = nlohmann::ordered_json::array();  // role, content, tool_calls, tool_call_id, name, reasoning_content
    nlohmann::ordered_json tools;   // null or an array of {"type": "function", "function": {...}}
    bool add_generation_prompt = true;
    bool parallel_tool_calls = true;
    nlohmann::ordered_json kwargs = nlohmann::ordered_json::object();  // chat_template_kwargs: enable_thinking, reasoning_effort, ...
    ChatOptions builtin;            // the built-in table's options (thinking, effort, date)
};

// A template that fails to parse or render: what() names the construct and the line.
struct TemplateError : std::runtime_error {
    using std::runtime_error::runtime_error;
};

class ChatFormat {
public:
    // The template of the file (tokenizer.chat_template, or tokenizer.chat_template.<name>
    // with `name`), else `override_source` when given, else the built-in one for `arch`.
    // Throws TemplateError when the Jinja source does not parse, std::invalid_argument for a
    // named template the file does not have.
    static ChatFormat from_model(const GgufFile& f, const Tokenizer& tok, const std::string& arch, const std::string& override_source = {},
                                 const std::string& name = {});
    ChatFormat(ChatFormat&&) noexcept;
    ~ChatFormat();

    // The prompt text (special tokens as text; no BOS unless the template writes it: see
    // starts_with_bos). Throws TemplateError.
    std::string render(const ChatInput& in) const;
    // Whether `text` (a render) begins with the BOS token's text, so the caller must not add
    // another when encoding.
    bool starts_with_bos(const std::string& text) const;

    bool is_jinja() const { return jinja_ != nullptr; }
    const std::string& source() const { return source_; }
    // The built-in description of the family: its reply markers (reasoning) and options.
    const ChatTemplate& builtin() const { return *builtin_; }
    // The reply's tool-call format (None: the template takes no tools).
    Format tool_format() const { return tool_format_; }

private:
    ChatFormat() = default;
    std::string source_;
    std::unique_ptr<jinja::Template> jinja_;
    const ChatTemplate* builtin_ = nullptr;
    Format tool_format_ = Format::None;
    std::string bos_, eos_;
};

}  // namespace ls::chat
