// Prompt text the template does not write itself: for the Generic format (templates that
// render no tools, e.g. Gemma 3), the system prompt that lists the tools and the JSON reply
// format parse_reply reads (as llama.cpp adds for such templates).
#pragma once
#include <string>
#include <vector>

#include "core/chat/tool_format.h"

namespace ls::chat {

// Text for the system message (prepend it to the client's, or make it the system message).
std::string generic_tool_prompt(const std::vector<ToolSpec>& tools, bool parallel);

}  // namespace ls::chat
