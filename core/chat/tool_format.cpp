#include "core/chat/tool_format.h"

#include <array>
#include <stdexcept>

namespace ls::chat {

namespace {
constexpr std::string_view kNames[] = {
#define LS_X(e, s) s,
    LS_TOOL_FORMATS(LS_X)
#undef LS_X
};

bool has(std::string_view s, std::string_view needle) { return s.find(needle) != std::string_view::npos; }

// The format a template writes its calls in, by the markers it renders; Generic when none.
Format from_template(std::string_view t) {
    if (t.empty()) return Format::None;
    if (has(t, "<|channel|>") && (has(t, "<|constrain|>") || has(t, "to=functions") || has(t, "<|call|>"))) return Format::Harmony;
    if (has(t, "<|tool_call>") && has(t, "<tool_call|>")) return Format::Gemma4;
    if (has(t, "tool▁calls▁begin") || has(t, "tool▁call▁begin"))
        return has(t, "```json") ? Format::DeepSeekR1 : Format::DeepSeekV31;
    if (has(t, "[TOOL_CALLS]")) return has(t, "[ARGS]") ? Format::Mistral : Format::MistralNemo;
    if (has(t, "<|tool_calls_section_begin|>") || has(t, "<|tool_call_begin|>")) return Format::KimiK2;
    if (has(t, "<|START_ACTION|>")) return Format::CommandR7B;
    if (has(t, "<TOOLCALL>")) return Format::NemotronV2;
    if (has(t, "<|tool_call|>")) return Format::Granite;
    if (has(t, "functools[")) return Format::FireFunction;
    if (has(t, "<function=") && has(t, "<|python_tag|>")) return Format::FunctionaryV31;
    if (has(t, ">>>all") || (has(t, ">>>") && has(t, "recipient"))) return Format::FunctionaryV32;
    // Formats not read yet, whose templates also mention <tool_call> (MiniMax's <invoke>).
    if (has(t, "<invoke name=") || has(t, "invoke name=\\\"")) return Format::Generic;
    if (has(t, "<seed:tool_call>") || has(t, "seed:tool_call")) return Format::SeedOss;
    if (has(t, "<arg_key>")) return Format::Glm45;
    if (has(t, "<tool_call>") && has(t, "<function=")) return Format::Qwen3Coder;
    if (has(t, "<tool_calls>")) return Format::Apriel;
    if (has(t, "<tool_call>")) return Format::Hermes;
    if (has(t, "<|start_header_id|>") && has(t, "tools") && (has(t, "<|python_tag|>") || has(t, "\"parameters\"")))
        return Format::Llama3;
    return Format::Generic;
}

// Families whose templates may render no tools (or be missing) but whose models were trained
// on a native format.
Format from_arch(std::string_view arch) {
    struct Row {
        std::string_view arch;
        Format f;
    };
    static constexpr Row rows[] = {
        {"qwen2", Format::Hermes},      {"qwen3", Format::Hermes},       {"qwen3moe", Format::Hermes},
        {"smollm3", Format::Hermes},    {"qwen3next", Format::Qwen3Coder}, {"qwen35", Format::Qwen3Coder},
        {"qwen35moe", Format::Qwen3Coder}, {"llama", Format::Llama3},    {"gpt-oss", Format::Harmony},
        {"gemma4", Format::Gemma4},     {"granite", Format::Granite},    {"granitemoe", Format::Granite},
        {"glm4moe", Format::Glm45},     {"seed_oss", Format::SeedOss},   {"deepseek2", Format::DeepSeekV31},
        {"deepseek3", Format::DeepSeekV31}, {"qwen3vl", Format::Hermes},  {"qwen3vlmoe", Format::Hermes},
    };
    for (const Row& r : rows)
        if (r.arch == arch) return r.f;
    return Format::Generic;
}
}  // namespace

std::string_view format_name(Format f) { return kNames[size_t(f)]; }

Format format_from_name(std::string_view name) {
    for (size_t i = 0; i < std::size(kNames); ++i)
        if (kNames[i] == name) return Format(i);
    return Format::None;
}

Format detect_format(std::string_view template_source, std::string_view arch) {
    Format f = from_template(template_source);
    if (f == Format::None || f == Format::Generic) {
        Format a = from_arch(arch);
        // A template that renders tools its own (unread) way keeps Generic; one that renders
        // no tools at all, or none, falls to the architecture's native format.
        if (f == Format::None || template_source.find("tools") == std::string_view::npos) return a;
    }
    return f;
}

std::vector<std::string_view> format_markers(Format f) {
    switch (f) {
    case Format::None:
    case Format::Generic: return {};
    case Format::Hermes:
    case Format::Qwen3Coder: return {"<tool_call>", "</tool_call>"};
    case Format::Glm45: return {"<tool_call>", "</tool_call>", "<arg_key>", "</arg_key>", "<arg_value>", "</arg_value>"};
    case Format::SeedOss: return {"<seed:tool_call>", "</seed:tool_call>"};
    case Format::Llama3: return {"<|python_tag|>", "<|eom_id|>"};
    case Format::MistralNemo: return {"[TOOL_CALLS]"};
    case Format::Mistral: return {"[TOOL_CALLS]", "[ARGS]", "[CALL_ID]"};
    case Format::Harmony: return {"<|start|>", "<|channel|>", "<|message|>", "<|constrain|>", "<|end|>", "<|call|>", "<|return|>"};
    case Format::Gemma4: return {"<|tool_call>", "<tool_call|>", "<|\"|>"};
    case Format::DeepSeekR1:
    case Format::DeepSeekV31:
        return {"<｜tool▁calls▁begin｜>", "<｜tool▁calls▁end｜>", "<｜tool▁call▁begin｜>", "<｜tool▁call▁end｜>", "<｜tool▁sep｜>"};
    case Format::Granite: return {"<|tool_call|>"};
    case Format::NemotronV2: return {"<TOOLCALL>", "</TOOLCALL>"};
    case Format::Apriel: return {"<tool_calls>", "</tool_calls>"};
    case Format::FireFunction: return {};
    case Format::CommandR7B:
        return {"<|START_ACTION|>", "<|END_ACTION|>", "<|START_THINKING|>", "<|END_THINKING|>", "<|START_RESPONSE|>", "<|END_RESPONSE|>"};
    case Format::FunctionaryV31: return {"<|python_tag|>"};
    case Format::FunctionaryV32: return {};
    case Format::KimiK2:
        return {"<|tool_calls_section_begin|>", "<|tool_calls_section_end|>", "<|tool_call_begin|>", "<|tool_call_argument_begin|>", "<|tool_call_end|>"};
    }
    return {};
}

bool format_gives_ids(Format f) {
    return f == Format::MistralNemo || f == Format::Mistral || f == Format::KimiK2 || f == Format::Generic;
}

size_t format_id_length(Format f) { return f == Format::MistralNemo || f == Format::Mistral ? 9 : 0; }

std::vector<ToolSpec> tools_from_json(const nlohmann::ordered_json& tools) {
    std::vector<ToolSpec> out;
    if (tools.is_null()) return out;
    if (!tools.is_array()) throw std::invalid_argument("\"tools\" must be an array");
    for (size_t i = 0; i < tools.size(); ++i) {
        const auto& t = tools[i];
        std::string where = "tools[" + std::to_string(i) + "]";
        if (!t.is_object() || !t.contains("function") || !t["function"].is_object())
            throw std::invalid_argument(where + " must be {\"type\": \"function\", \"function\": {...}}");
        if (t.contains("type") && t["type"] != "function") throw std::invalid_argument(where + ".type must be \"function\"");
        const auto& fn = t["function"];
        if (!fn.contains("name") || !fn["name"].is_string() || fn["name"].get<std::string>().empty())
            throw std::invalid_argument(where + ".function.name must be a non-empty string");
        ToolSpec s;
        s.name = fn["name"].get<std::string>();
        if (fn.contains("description") && fn["description"].is_string()) s.description = fn["description"].get<std::string>();
        if (fn.contains("parameters")) {
            if (!fn["parameters"].is_object()) throw std::invalid_argument(where + ".function.parameters must be an object");
            s.parameters = fn["parameters"];
        }
        out.push_back(std::move(s));
    }
    return out;
}

}  // namespace ls::chat
