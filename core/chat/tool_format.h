// The ways model families write a tool call in their reply, and which one a model uses, read
// off its chat template (the Jinja source in the GGUF) and its architecture name.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace ls::chat {

// X(enum name, printable name). Each row's reply syntax is described where it is read
// (format_*.cpp).
#define LS_TOOL_FORMATS(X)                                                                     \
    X(None, "none")                        /* no tool calls: the reply is content */          \
    X(Generic, "generic")                  /* whole reply is {"tool_calls":[..]} / {"response":..} */ \
    X(Hermes, "hermes")                    /* <tool_call>{"name":..,"arguments":..}</tool_call> */ \
    X(Qwen3Coder, "qwen3-coder")           /* <tool_call><function=f><parameter=k>v</parameter>.. */ \
    X(SeedOss, "seed-oss")                 /* the same inside <seed:tool_call> */              \
    X(Glm45, "glm-4.5")                    /* <tool_call>f<arg_key>k</arg_key><arg_value>v.. */ \
    X(Llama3, "llama3")                    /* {"name":..,"parameters":..}; <|python_tag|> */  \
    X(MistralNemo, "mistral-nemo")         /* [TOOL_CALLS][{"name":..,"arguments":..,"id":..}] */ \
    X(Mistral, "mistral")                  /* [TOOL_CALLS]f[CALL_ID]id[ARGS]{..} (CALL_ID optional) */ \
    X(Harmony, "gpt-oss-harmony")          /* <|channel|>commentary to=functions.f ..<|message|>{..}<|call|> */ \
    X(Gemma4, "gemma4")                    /* <|tool_call>call:f{k:<|"|>v<|"|>}<tool_call|> */ \
    X(DeepSeekR1, "deepseek-r1")           /* <｜tool▁call▁begin｜>function<｜tool▁sep｜>f\n```json.. */ \
    X(DeepSeekV31, "deepseek-v3.1")        /* <｜tool▁call▁begin｜>f<｜tool▁sep｜>{..}<｜tool▁call▁end｜> */ \
    X(Granite, "granite")                  /* <|tool_call|>[{"name":..,"arguments":..}] */      \
    X(NemotronV2, "nemotron-v2")           /* <TOOLCALL>[..]</TOOLCALL> */                     \
    X(Apriel, "apriel")                    /* <tool_calls>[..]</tool_calls> */                 \
    X(FireFunction, "firefunction-v2")     /* functools[..] */                                 \
    X(CommandR7B, "command-r7b")           /* <|START_ACTION|>[{"tool_name":..,"parameters":..}]<|END_ACTION|> */ \
    X(FunctionaryV31, "functionary-v3.1")  /* <function=f>{..}</function>; <|python_tag|>code */ \
    X(FunctionaryV32, "functionary-v3.2")  /* >>>f\n{..}  (>>>all\n: content) */               \
    X(KimiK2, "kimi-k2")                   /* <|tool_call_begin|>functions.f:0<|tool_call_argument_begin|>{..}.. */

enum class Format : uint8_t {
#define LS_X(e, s) e,
    LS_TOOL_FORMATS(LS_X)
#undef LS_X
};

std::string_view format_name(Format f);
// The format with this printable name (for a command-line override); None when unknown.
Format format_from_name(std::string_view name);

// The tool-call format of a model: its chat template's Jinja source (tokenizer.chat_template;
// may be empty) and its GGUF general.architecture. A template that renders tools in no format
// this module reads gets Generic (the model is told the JSON reply format in its system
// prompt, see generic_tool_prompt); a model without a template is read by its architecture.
Format detect_format(std::string_view template_source, std::string_view arch = {});

// Whether the format carries its own call ids (kept as the model wrote them) and the length the
// family's template demands of ids made by the caller (Mistral's templates reject other than
// 9 alphanumerics; 0: any).
bool format_gives_ids(Format f);
size_t format_id_length(Format f);

// The marker texts a format's calls are written with that vocabularies hold as special
// (control) tokens: the server must decode them into the reply text (render_special) for the
// parser to see the calls, as ChatTemplate::marker_piece does for reasoning markers.
std::vector<std::string_view> format_markers(Format f);

// A function the client declared ("tools": [{"type":"function","function":{..}}]).
struct ToolSpec {
    std::string name;
    std::string description;
    nlohmann::ordered_json parameters = nlohmann::ordered_json::object();  // JSON schema
};
// Reads the request's "tools" array; throws std::invalid_argument naming what is wrong.
std::vector<ToolSpec> tools_from_json(const nlohmann::ordered_json& tools);

}  // namespace ls::chat
