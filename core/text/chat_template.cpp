#include "core/text/chat_template.h"

namespace ls {

namespace {

// Gemma 4 (its published template, thinking off): a system role of its own and the
// assistant as "model"; the generation prompt opens a model turn with an empty thought
// channel.
constexpr ChatTemplate kGemma4{
    .turn_open = "<|turn>",
    .role_end = "\n",
    .turn_close = "<turn|>\n",
    .roles = {{{"assistant", "model"}, {"model", "model"}, {"system", "system"}, {"developer", "system"}}},
    .other_role = "user",
    .model_role = "model",
    .thought_open = "<|channel>",
    .thought_close = "<channel|>",
    .trim_content = true,
    .generation_prompt = "<|turn>model\n<|channel>thought\n<channel|>",
    .continue_from_seen = true,
};

// Gemma 2 / 3: only user and model turns, a leading system message joined to the first turn
// by a blank line.
constexpr ChatTemplate kGemma{
    .turn_open = "<start_of_turn>",
    .role_end = "\n",
    .turn_close = "<end_of_turn>\n",
    .roles = {{{"assistant", "model"}, {"model", "model"}}},
    .other_role = "user",
    .model_role = "model",
    .system_in_first_turn = true,
    .system_separator = "\n\n",
    .trim_content = true,
    .generation_prompt = "<start_of_turn>model\n",
};

// ChatML (Qwen and the default): roles and contents as given.
constexpr ChatTemplate kChatMl{
    .turn_open = "<|im_start|>",
    .role_end = "\n",
    .turn_close = "<|im_end|>\n",
    .roles = {},
    .other_role = "",
    .model_role = "assistant",
    .generation_prompt = "<|im_start|>assistant\n",
};

struct ArchTemplate {
    std::string_view arch;
    bool prefix;  // matches every architecture that starts with `arch`
    const ChatTemplate* tmpl;
};
// Exact names before the prefixes that would also match them.
constexpr ArchTemplate kTemplates[] = {
    {"gemma4", false, &kGemma4},
    {"gemma", true, &kGemma},
};

std::string trim(const std::string& s) {
    const char* ws = " \t\n\r\f\v";
    size_t b = s.find_first_not_of(ws);
    if (b == std::string::npos) return {};
    size_t e = s.find_last_not_of(ws);
    return s.substr(b, e - b + 1);
}

}  // namespace

std::string_view ChatTemplate::role_name(std::string_view role) const {
    for (const RoleName& r : roles)
        if (!r.from.empty() && r.from == role) return r.to;
    return other_role.empty() ? role : other_role;
}

const ChatTemplate& chat_template_for(std::string_view arch) {
    for (const ArchTemplate& t : kTemplates)
        if (t.prefix ? arch.starts_with(t.arch) : arch == t.arch) return *t.tmpl;
    return kChatMl;
}

std::string format_chat(const std::vector<ChatMsg>& msgs, bool add_generation_prompt, const std::string& arch) {
    const ChatTemplate& t = chat_template_for(arch);
    const auto text = [&](const std::string& s) { return t.trim_content ? trim(s) : s; };
    std::string out;
    std::string system_prefix;
    size_t i = 0;
    if (t.system_in_first_turn && !msgs.empty() && msgs[0].role == "system") {
        system_prefix = text(msgs[0].content) + std::string(t.system_separator);
        i = 1;
    }
    bool prefix_used = system_prefix.empty();
    for (; i < msgs.size(); ++i) {
        const ChatMsg& m = msgs[i];
        const std::string_view role = t.role_name(m.role);
        std::string content = m.content;
        if (!t.thought_open.empty() && role == t.model_role) {
            const std::string open(t.thought_open), close(t.thought_close);
            for (size_t a; (a = content.find(open)) != std::string::npos;) {
                const size_t b = content.find(close, a);
                content.erase(a, b == std::string::npos ? std::string::npos : b + close.size() - a);
            }
        }
        ((out += t.turn_open) += role) += t.role_end;
        if (!prefix_used) {
            out += system_prefix;
            prefix_used = true;
        }
        (out += text(content)) += t.turn_close;
    }
    if (!prefix_used) ((((out += t.turn_open) += t.other_role) += t.role_end) += system_prefix) += t.turn_close;
    if (add_generation_prompt) out += t.generation_prompt;
    return out;
}

}  // namespace ls
