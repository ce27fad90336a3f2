// Chat templates as data: one description a model family, looked up by the GGUF
// general.architecture. format_chat renders any of them with the same code, and ReplySplitter
// reads a reply back into what the user sees and the model's reasoning.
#pragma once
#include <array>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace ls {

class Tokenizer;

struct ChatMsg {
    std::string role;  // "system", "user", "assistant"
    std::string content;
};

// Where the model writes its reasoning, as markers in the reply's text (special tokens
// rendered): a marker switches what follows to the reasoning or to the visible content, or is
// just dropped (a header that says nothing).
struct ReplyMarker {
    enum Action : uint8_t { None, ToReasoning, ToContent, Drop };
    std::string_view text{};
    Action action = None;
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
    // Thinking the model wrote between these markers is not part of the history (empty: kept);
    // the newlines after it go too.
    std::string_view thought_open{}, thought_close{};
    // Printed before the conversation whatever it holds ("{date}": ChatOptions::date,
    // "{reasoning}": ChatOptions::reasoning_effort).
    std::string_view preamble{};
    // A leading system message's content is printed between these (in its own turn).
    std::string_view system_prefix{}, system_suffix{};
    // The system turn is printed even when the conversation has no system message (its
    // content then is system_prefix + system_suffix).
    bool system_always = false;
    // A family without a system role: a leading system message opens the first turn, followed
    // by system_separator (alone, it gets a turn of role other_role).
    bool system_in_first_turn = false;
    std::string_view system_separator{};
    bool trim_content = false;  // whitespace trimmed off both ends, like the HF templates
    // A model turn that ends the conversation (no generation prompt) closes with this instead
    // of turn_close (harmony's <|return|>); empty: turn_close.
    std::string_view last_reply_close{};
    // Appended for add_generation_prompt: opens the model's turn. Families with a thinking
    // switch append no_thinking after it when thinking is off; think_on / think_off in a user
    // or system message switch it (the last one written wins), else thinking_default.
    std::string_view generation_prompt{};
    std::string_view no_thinking{};
    std::string_view think_on{}, think_off{};
    bool thinking_default = false;
    // Reading a reply: the markers, longest first where one begins another.
    std::array<ReplyMarker, 6> reply_markers{};
    // A multi-turn chat continues from the tokens the model saw (the previous prompt and
    // reply, then turn_close and the new turn) instead of re-rendering the transcript: for
    // templates whose re-rendered history differs from what was generated (Gemma 4 drops a
    // model turn's thought channel), which sliding-window rings could not roll back to.
    bool continue_from_seen = false;
    // The BOS token is never part of the text: the caller encodes with add_bos, which the
    // vocabulary decides (tokenizer.ggml.add_bos_token).

    std::string_view role_name(std::string_view role) const;
    // The reply holds reasoning to take out (its markers are special tokens: decode the reply
    // with render_special to read them).
    bool has_reasoning() const { return reply_markers[0].action != ReplyMarker::None; }
    // A special token's text that is (part of) a reply marker: it is rendered for the
    // splitter; other control tokens the model may write stay out of the reply as before.
    bool marker_piece(std::string_view piece) const {
        for (const ReplyMarker& m : reply_markers)
            if (m.action != ReplyMarker::None && !piece.empty() && m.text.find(piece) != std::string_view::npos) return true;
        return false;
    }
};

// What a request may choose beyond the messages.
struct ChatOptions {
    int thinking = -1;             // -1: the template's switch decides; 0: off; 1: on
    std::string date;              // "{date}" in a preamble (YYYY-MM-DD); empty: today, local time
    std::string reasoning_effort;  // "{reasoning}" in a preamble; empty: "medium"
};

// The template for a GGUF architecture: an exact name first ("gemma4"), then a family
// prefix ("gemma*"), else ChatML. With has_token (does the vocabulary hold this text as one
// token?), an architecture shared by families with other formats ("llama": Llama 3, SmolLM's
// ChatML) gets the template whose turn marker the vocabulary has, the architecture's first.
const ChatTemplate& chat_template_for(std::string_view arch, const std::function<bool(std::string_view)>& has_token = {});

// Renders a conversation in the model's chat format, without the BOS token (encode with
// add_bos=true, parse_special=true).
std::string format_chat(const std::vector<ChatMsg>& msgs, bool add_generation_prompt, const std::string& arch,
                        const ChatOptions& opt = {});
std::string format_chat(const std::vector<ChatMsg>& msgs, bool add_generation_prompt, const ChatTemplate& t,
                        const ChatOptions& opt = {});
// Whether format_chat opens the model's turn with thinking on.
bool chat_thinking(const std::vector<ChatMsg>& msgs, const ChatTemplate& t, const ChatOptions& opt = {});

// A generated token's text: control tokens give "", or their text where `reply` (may be
// null) has them in its markers, for ReplySplitter.
std::string reply_piece(const Tokenizer& tok, int32_t id, const ChatTemplate* reply);

// Splits a reply, streamed in pieces of text with the special tokens rendered, into the
// visible content and the reasoning, by the template's reply_markers. A piece that may be the
// start of a marker is held back until the next one shows what it is. The newlines that open
// a part and those that close the reasoning are dropped.
class ReplySplitter {
public:
    explicit ReplySplitter(const ChatTemplate& t) : t_(&t) {}
    struct Out {
        std::string content, reasoning;
    };
    Out push(std::string_view text);
    Out finish();  // the end of the reply: releases what is held back

private:
    const ChatTemplate* t_;
    std::string held_;            // text that may begin a marker
    bool reasoning_ = false;      // in the reasoning part
    bool part_start_ = false;     // a marker opened this part and nothing is written yet: newlines dropped
    size_t newlines_ = 0;         // reasoning: newlines held back (dropped if the part ends)
    void emit(std::string_view s, Out& o);
    Out scan(bool final);
};

}  // namespace ls
