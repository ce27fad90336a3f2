// Chat templates as data: one description a model family, looked up by the GGUF
// general.architecture. format_chat renders any of them with the same code.
#pragma once
#include <array>
#include <string>
#include <string_view>
#include <vector>

namespace ls {

struct ChatMsg {
    std::string role;  // "system", "user", "assistant"
    std::string content;
};

struct ChatTemplate {
    // A turn: turn_open + role + role_end + content + turn_close.
    std::string_view turn_open{}, role_end{}, turn_close{};
    // Role names the template prints for the message roles; a role not listed is printed
    // as other_role, or as given where other_role is empty.
    struct RoleName {
        std::string_view from, to;
    };
    std::array<RoleName, 4> roles{};
    std::string_view other_role{};
    std::string_view model_role{};  // turns of this (printed) role have their thinking dropped
    // Thinking the model wrote between these markers is not part of the history (empty: kept).
    std::string_view thought_open{}, thought_close{};
    // A family without a system role: a leading system message opens the first turn, followed
    // by system_separator (alone, it gets a turn of role other_role).
    bool system_in_first_turn = false;
    std::string_view system_separator{};
    bool trim_content = false;  // whitespace trimmed off both ends, like the HF templates
    // Appended for add_generation_prompt: opens the model's turn.
    std::string_view generation_prompt{};
    // A multi-turn chat continues from the tokens the model saw (the previous prompt and
    // reply, then turn_close and the new turn) instead of re-rendering the transcript: for
    // templates whose re-rendered history differs from what was generated (Gemma 4 drops a
    // model turn's thought channel), which sliding-window rings could not roll back to.
    bool continue_from_seen = false;
    // The BOS token is never part of the text: the caller encodes with add_bos, which the
    // vocabulary decides (tokenizer.ggml.add_bos_token).

    std::string_view role_name(std::string_view role) const;
};

// The template for a GGUF architecture: an exact name first ("gemma4"), then a family
// prefix ("gemma*"), else ChatML.
const ChatTemplate& chat_template_for(std::string_view arch);

// Renders a conversation in the model's chat format, without the BOS token (encode with
// add_bos=true, parse_special=true).
std::string format_chat(const std::vector<ChatMsg>& msgs, bool add_generation_prompt, const std::string& arch);

}  // namespace ls
