#include "core/text/chat_template.h"

#include <ctime>

#include "core/text/tokenizer.h"

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
    .reply_markers = {{{"<|channel>thought", ReplyMarker::ToReasoning},
                       {"<|channel>", ReplyMarker::ToReasoning},
                       {"<channel|>", ReplyMarker::ToContent}}},
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

// Llama 3.1 / 3.3 (meta-llama's template without tools): the system turn is always there and
// opens with the knowledge cutoff and the template's default date (Llama 3.2's prints today's
// date where the renderer has strftime_now, 3.0's has no such lines: a fixed text keeps the
// prompt, and so the cache, the same from day to day).
constexpr ChatTemplate kLlama3{
    .turn_open = "<|start_header_id|>",
    .role_end = "<|end_header_id|>\n\n",
    .turn_close = "<|eot_id|>",
    .model_role = "assistant",
    .system_prefix = "Cutting Knowledge Date: December 2023\nToday Date: 26 Jul 2024\n\n",
    .system_always = true,
    .trim_content = true,
    .generation_prompt = "<|start_header_id|>assistant<|end_header_id|>\n\n",
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

// Qwen 3 (Qwen/Qwen3-0.6B's template without tools): ChatML; an earlier reply's <think>
// block is dropped from the history. Thinking is off unless asked for: the generation prompt
// then holds an empty think block (the template's enable_thinking=false), and "/think" or
// "/no_think" in a message switches it as the model was trained to.
constexpr ChatTemplate kQwen3{
    .turn_open = "<|im_start|>",
    .role_end = "\n",
    .turn_close = "<|im_end|>\n",
    .model_role = "assistant",
    .thought_open = "<think>",
    .thought_close = "</think>",
    .generation_prompt = "<|im_start|>assistant\n",
    .no_thinking = "<think>\n\n</think>\n\n",
    .think_on = "/think",
    .think_off = "/no_think",
    .reply_markers = {{{"<think>", ReplyMarker::ToReasoning}, {"</think>", ReplyMarker::ToContent}}},
};

// gpt-oss's harmony format (openai/gpt-oss's template without tools): a fixed system message
// with today's date and the reasoning effort, the user's system prompt as the developer's
// instructions, earlier replies as their final channel only. The model answers
// <|channel|>analysis<|message|>...<|end|><|start|>assistant<|channel|>final<|message|>...
// and ends with <|return|> (an end-of-generation token, <|end|> is not).
constexpr ChatTemplate kHarmony{
    .turn_open = "<|start|>",
    .role_end = "<|message|>",
    .turn_close = "<|end|>",
    .roles = {{{"assistant", "assistant<|channel|>final"}, {"system", "developer"}, {"developer", "developer"}}},
    .model_role = "assistant<|channel|>final",
    .preamble = "<|start|>system<|message|>You are ChatGPT, a large language model trained by OpenAI.\n"
                "Knowledge cutoff: 2024-06\nCurrent date: {date}\n\nReasoning: {reasoning}\n\n"
                "# Valid channels: analysis, commentary, final. Channel must be included for every message.<|end|>",
    .system_prefix = "# Instructions\n\n",
    .system_suffix = "\n\n",
    .last_reply_close = "<|return|>",
    .generation_prompt = "<|start|>assistant",
    .reply_markers = {{{"<|channel|>analysis<|message|>", ReplyMarker::ToReasoning},
                       {"<|channel|>commentary<|message|>", ReplyMarker::ToReasoning},
                       {"<|channel|>final<|message|>", ReplyMarker::ToContent},
                       {"<|end|>", ReplyMarker::ToContent},
                       {"<|start|>assistant", ReplyMarker::Drop}}},
};

struct ArchTemplate {
    std::string_view arch;
    bool prefix;  // matches every architecture that starts with `arch`
    const ChatTemplate* tmpl;
};
// Exact names before the prefixes that would also match them.
constexpr ArchTemplate kTemplates[] = {
    {"gemma4", false, &kGemma4}, {"gemma", true, &kGemma},      {"llama", false, &kLlama3},
    {"qwen3", false, &kQwen3},   {"qwen3moe", false, &kQwen3},  {"gpt-oss", false, &kHarmony},
};

std::string trim(const std::string& s) {
    const char* ws = " \t\n\r\f\v";
    size_t b = s.find_first_not_of(ws);
    if (b == std::string::npos) return {};
    size_t e = s.find_last_not_of(ws);
    return s.substr(b, e - b + 1);
}

std::string today() {
    const std::time_t now = std::time(nullptr);
    std::tm tm{};
    localtime_r(&now, &tm);
    char buf[16];
    std::strftime(buf, sizeof buf, "%Y-%m-%d", &tm);
    return buf;
}

void replace_all(std::string& s, std::string_view from, const std::string& to) {
    for (size_t p = 0; (p = s.find(from, p)) != std::string::npos; p += to.size()) s.replace(p, from.size(), to);
}

// The content without the thinking between t.thought_open and t.thought_close (a close
// without an open drops everything before it, an open without a close everything after it),
// and without the newlines that followed it.
std::string drop_thought(const ChatTemplate& t, std::string content) {
    const std::string open(t.thought_open), close(t.thought_close);
    for (size_t c; (c = content.find(close)) != std::string::npos;) {
        const size_t a = content.rfind(open, c);
        const size_t from = a == std::string::npos ? 0 : a;
        content.erase(from, c + close.size() - from);
        const size_t nl = content.find_first_not_of('\n', from);
        content.erase(from, (nl == std::string::npos ? content.size() : nl) - from);
    }
    if (const size_t a = content.find(open); a != std::string::npos) content.erase(a);
    return content;
}

}  // namespace

std::string_view ChatTemplate::role_name(std::string_view role) const {
    for (const RoleName& r : roles)
        if (!r.from.empty() && r.from == role) return r.to;
    return other_role.empty() ? role : other_role;
}

const ChatTemplate& chat_template_for(std::string_view arch, const std::function<bool(std::string_view)>& has_token) {
    const ChatTemplate* found = &kChatMl;
    for (const ArchTemplate& t : kTemplates)
        if (t.prefix ? arch.starts_with(t.arch) : arch == t.arch) {
            found = t.tmpl;
            break;
        }
    if (!has_token || has_token(found->turn_open)) return *found;
    for (const ChatTemplate* other : {&kChatMl, &kLlama3, &kGemma})
        if (has_token(other->turn_open)) return *other;
    return *found;
}

bool chat_thinking(const std::vector<ChatMsg>& msgs, const ChatTemplate& t, const ChatOptions& opt) {
    if (t.no_thinking.empty()) return t.thinking_default;
    if (opt.thinking >= 0) return opt.thinking == 1;
    for (size_t i = msgs.size(); i-- > 0;) {
        const ChatMsg& m = msgs[i];
        if (m.role != "user" && m.role != "system") continue;
        const size_t on = t.think_on.empty() ? std::string::npos : m.content.rfind(t.think_on);
        const size_t off = t.think_off.empty() ? std::string::npos : m.content.rfind(t.think_off);
        if (on != std::string::npos || off != std::string::npos) {
            if (on == std::string::npos) return false;
            if (off == std::string::npos) return true;
            return on > off;
        }
    }
    return t.thinking_default;
}

std::string format_chat(const std::vector<ChatMsg>& msgs, bool add_generation_prompt, const std::string& arch,
                        const ChatOptions& opt) {
    return format_chat(msgs, add_generation_prompt, chat_template_for(arch), opt);
}

std::string format_chat(const std::vector<ChatMsg>& msgs, bool add_generation_prompt, const ChatTemplate& t,
                        const ChatOptions& opt) {
    const auto text = [&](const std::string& s) { return t.trim_content ? trim(s) : s; };
    std::string out(t.preamble);
    if (!t.preamble.empty()) {
        replace_all(out, "{date}", opt.date.empty() ? today() : opt.date);
        replace_all(out, "{reasoning}", opt.reasoning_effort.empty() ? std::string("medium") : opt.reasoning_effort);
    }
    std::string system_prefix;
    size_t i = 0;
    const bool leading_system = !msgs.empty() && (msgs[0].role == "system" || msgs[0].role == "developer");
    if (t.system_in_first_turn && leading_system) {
        system_prefix = text(msgs[0].content) + std::string(t.system_separator);
        i = 1;
    } else if (leading_system || t.system_always) {
        const std::string content = leading_system ? text(msgs[0].content) : std::string();
        ((out += t.turn_open) += t.role_name("system")) += t.role_end;
        (((out += t.system_prefix) += content) += t.system_suffix) += t.turn_close;
        i = leading_system ? 1 : 0;
    }
    bool prefix_used = system_prefix.empty();
    for (; i < msgs.size(); ++i) {
        const ChatMsg& m = msgs[i];
        const std::string_view role = t.role_name(m.role);
        const bool model = role == t.model_role;
        const std::string content = model && !t.thought_open.empty() ? drop_thought(t, m.content) : m.content;
        ((out += t.turn_open) += role) += t.role_end;
        if (!prefix_used) {
            out += system_prefix;
            prefix_used = true;
        }
        out += text(content);
        const bool last_reply = model && i + 1 == msgs.size() && !add_generation_prompt && !t.last_reply_close.empty();
        out += last_reply ? t.last_reply_close : t.turn_close;
    }
    if (!prefix_used) ((((out += t.turn_open) += t.other_role) += t.role_end) += system_prefix) += t.turn_close;
    if (add_generation_prompt) {
        out += t.generation_prompt;
        if (!chat_thinking(msgs, t, opt)) out += t.no_thinking;
    }
    return out;
}

// ---- ReplySplitter ----

void ReplySplitter::emit(std::string_view s, Out& o) {
    if (part_start_) {
        while (!s.empty() && s.front() == '\n') s.remove_prefix(1);
        if (s.empty()) return;
        part_start_ = false;
    }
    if (!reasoning_) {
        o.content += s;
        return;
    }
    // Newlines at the end of the reasoning are held back: the part may end right after them.
    size_t k = s.size();
    while (k > 0 && s[k - 1] == '\n') --k;
    if (k > 0) {
        o.reasoning.append(newlines_, '\n');
        newlines_ = 0;
        o.reasoning += s.substr(0, k);
    }
    newlines_ += s.size() - k;
}

std::string reply_piece(const Tokenizer& tok, int32_t id, const ChatTemplate* reply) {
    if (!reply || tok.token_type(id) != TokenType::Control) return tok.token_to_piece(id, false);
    const std::string text = tok.token_to_piece(id, true);
    return reply->marker_piece(text) ? text : std::string();
}

ReplySplitter::Out ReplySplitter::push(std::string_view text) {
    held_ += text;
    return scan(false);
}

ReplySplitter::Out ReplySplitter::finish() { return scan(true); }

ReplySplitter::Out ReplySplitter::scan(bool final) {
    Out o;
    size_t at = 0;  // held_[..at) is written out
    size_t i = 0;
    while (i < held_.size()) {
        const std::string_view rest = std::string_view(held_).substr(i);
        const ReplyMarker* hit = nullptr;
        bool longer = false;  // rest is a proper prefix of a marker (which the next piece may complete)
        for (const ReplyMarker& m : t_->reply_markers) {
            if (m.action == ReplyMarker::None) break;
            if (!hit && rest.starts_with(m.text)) hit = &m;
            if (!final && m.text.size() > rest.size() && m.text.starts_with(rest)) longer = true;
        }
        if (longer) break;  // wait for the next piece
        if (!hit) {
            ++i;
            continue;
        }
        emit(std::string_view(held_).substr(at, i - at), o);
        if (hit->action != ReplyMarker::Drop) {
            reasoning_ = hit->action == ReplyMarker::ToReasoning;
            part_start_ = true;
            newlines_ = 0;
        }
        i += hit->text.size();
        at = i;
    }
    emit(std::string_view(held_).substr(at, i - at), o);
    held_.erase(0, i);
    return o;
}

}  // namespace ls
