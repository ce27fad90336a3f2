#include "core/chat/tool_prompt.h"

namespace ls::chat {

std::string generic_tool_prompt(const std::vector<ToolSpec>& tools, bool parallel) {
    using nlohmann::ordered_json;
    ordered_json list = ordered_json::array();
    for (const ToolSpec& t : tools) {
        ordered_json fn = {{"name", t.name}};
        if (!t.description.empty()) fn["description"] = t.description;
        fn["parameters"] = t.parameters;
        list.push_back(std::move(fn));
    }
    std::string s = "You can call these tools:\n";
    s += list.dump(2, ' ', false, ordered_json::error_handler_t::replace);
    s += "\n\nReply with a single JSON object and nothing else: either\n";
    if (parallel)
        s += "{\"tool_calls\": [{\"name\": <tool name>, \"arguments\": <arguments object>}, ...]}\nto call one or more tools,";
    else
        s += "{\"tool_call\": {\"name\": <tool name>, \"arguments\": <arguments object>}}\nto call a tool,";
    s += " or\n{\"response\": <your answer as a string>}\nto answer the user directly.";
    return s;
}

}  // namespace ls::chat
