// Grammars for forced tool calls (tool_choice "required" or a named function): GBNF, in
// llama.cpp's syntax, of exactly a format's call wrapper around each function's arguments,
// and the text at which a lazy grammar (tool_choice "auto" with calls enforced) starts.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "core/chat/tool_format.h"

namespace ls::chat {

// GBNF rules for a JSON schema, one of them named rule_name (the JSON-schema converter's).
using SchemaRules = std::function<std::string(const nlohmann::ordered_json& schema, const std::string& rule_name)>;
// The JSON-schema converter's (core/grammar/json_schema.h) rules for `schema`, renamed under
// rule_name so that the rules of several schemas in one grammar cannot collide: what the
// server and the C API pass as schema_rules. Throws grammar::Error for a schema it cannot convert.
std::string schema_rules(const nlohmann::ordered_json& schema, const std::string& rule_name);

// The grammar (its start rule is "root") of one call of one of `tools` in format f, or of one
// or more with `parallel`; pass only the named function for a named tool_choice. Arguments
// are schema_rules(parameters, "tool-<i>-args"); the XML formats (Qwen3-Coder, Seed-OSS, GLM)
// ask it for each parameter's value instead ("tool-<i>-arg-<j>") and take string parameters as
// plain text; Gemma 4's arguments are its own syntax and are checked for shape only. Rules
// the converter defines twice with the same text are written once; the helpers here are
// prefixed "tc-". Throws std::invalid_argument for Format::None or no tools.
std::string tool_call_gbnf(Format f, const std::vector<ToolSpec>& tools, bool parallel, const SchemaRules& schema_rules);

// Where a call starts, for a lazy grammar (llama.cpp's grammar triggers): the grammar is
// enforced from the first of `words` the model writes (the word is the grammar's first text),
// or, with at_start, from the reply's first non-space text when it matches start_pattern (an
// ECMAScript regex; empty: always). content_before_call: the model may write text (or
// reasoning) before its first call; where false, a forced call begins the reply.
struct CallTrigger {
    bool content_before_call = true;
    std::vector<std::string> words;
    bool at_start = false;
    std::string start_pattern;
};
CallTrigger call_trigger(Format f);

}  // namespace ls::chat
