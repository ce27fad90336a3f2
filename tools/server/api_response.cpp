#include "tools/server/api_response.h"

#include <cstdio>

#include "core/text/utf8.h"

namespace ls::server {

using nlohmann::json;

std::string dump(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

json error_body(int status, const std::string& message, const std::string& type, const std::string& param,
                const std::string& code) {
    json e = {{"message", message}, {"type", type}, {"param", param.empty() ? json(nullptr) : json(param)}};
    e["code"] = code.empty() ? json(status) : json(code);
    return {{"error", e}};
}

json usage_json(const Usage& u) {
    return {{"prompt_tokens", u.prompt_tokens},
            {"completion_tokens", u.completion_tokens},
            {"total_tokens", u.prompt_tokens + u.completion_tokens},
            {"prompt_tokens_details", {{"cached_tokens", u.cached_tokens}}}};
}

namespace {

// A token's text; "" for an id the tokenizer does not have (a model whose embedding rows
// outnumber its vocabulary can still produce one).
std::string piece_of(const Tokenizer& tok, int32_t id) { return id >= 0 && id < tok.n_vocab() ? tok.token_to_piece(id, false) : ""; }

// A token's text as a JSON string key: itself when it is whole UTF-8; else, as OpenAI writes
// partial characters, "bytes:" and its bytes as \xNN escapes. (Written as is, every such
// piece became U+FFFD when the JSON was written: two alternatives of one position gave two
// equal keys.)
std::string text_key(const std::string& s) {
    for (size_t i = 0; i < s.size();) {
        const size_t n = utf8_valid_len(s, i);
        if (n == 0) {
            std::string k = "bytes:";
            char hex[5];
            for (unsigned char c : s) {
                std::snprintf(hex, sizeof hex, "\\x%02x", c);
                k += hex;
            }
            return k;
        }
        i += n;
    }
    return s;
}

json bytes_of(const std::string& s) {
    json b = json::array();
    for (unsigned char c : s) b.push_back(int(c));
    return b;
}

}  // namespace

json logprobs_json(const ResponseMeta& m, const std::vector<TokenOut>& tokens, const Tokenizer& tok, size_t text_offset) {
    if (m.chat) {
        json content = json::array();
        for (const TokenOut& t : tokens) {
            json top = json::array();
            for (const TokenLogprob& a : t.top) {
                const std::string p = piece_of(tok, a.id);
                top.push_back({{"token", p}, {"logprob", a.logprob}, {"bytes", bytes_of(p)}});
            }
            content.push_back({{"token", t.piece}, {"logprob", t.logprob}, {"bytes", bytes_of(t.piece)}, {"top_logprobs", top}});
        }
        return {{"content", content}};
    }
    json toks = json::array(), lps = json::array(), tops = json::array(), offs = json::array();
    for (const TokenOut& t : tokens) {
        toks.push_back(text_key(t.piece));
        lps.push_back(t.logprob);
        json top = json::object();
        for (const TokenLogprob& a : t.top)  // most likely first: of two alternatives with one text, it stays
            top.emplace(text_key(piece_of(tok, a.id)), a.logprob);
        tops.push_back(top);
        offs.push_back(text_offset);
        text_offset += t.piece.size();
    }
    return {{"tokens", toks}, {"token_logprobs", lps}, {"top_logprobs", tops}, {"text_offset", offs}};
}

json full_response(const ResponseMeta& m, const std::vector<ChoiceOut>& choices, const Usage& u, const Tokenizer& tok) {
    json out = json::array();
    for (size_t k = 0; k < choices.size(); ++k) {
        const ChoiceOut& c = choices[k];
        json choice = {{"index", k}, {"finish_reason", c.finish}};
        choice["logprobs"] = m.logprobs ? logprobs_json(m, c.tokens, tok, 0) : json(nullptr);
        if (m.chat) {
            choice["message"] = {{"role", "assistant"}, {"content", c.text}};
            if (!c.reasoning.empty()) choice["message"]["reasoning_content"] = c.reasoning;
            if (!c.tool_calls.empty()) {
                // (OpenAI: content null when the reply is only calls.)
                if (c.text.empty()) choice["message"]["content"] = nullptr;
                json calls = json::array();
                for (const chat::ToolCall& t : c.tool_calls)
                    calls.push_back({{"id", t.id}, {"type", "function"}, {"function", {{"name", t.name}, {"arguments", t.arguments}}}});
                choice["message"]["tool_calls"] = std::move(calls);
            }
        } else
            choice["text"] = c.text;
        out.push_back(std::move(choice));
    }
    return {{"id", m.id},
            {"object", m.chat ? "chat.completion" : "text_completion"},
            {"created", m.created},
            {"model", m.model},
            {"choices", out},
            {"usage", usage_json(u)}};
}

json stream_chunk(const ResponseMeta& m, int index, const std::string& text, const std::vector<TokenOut>& tokens,
                  const std::string& finish, bool first, size_t text_offset, const Tokenizer& tok, const std::string& reasoning) {
    json choice = {{"index", index}};
    choice["finish_reason"] = finish.empty() ? json(nullptr) : json(finish);
    choice["logprobs"] = m.logprobs && !tokens.empty() ? logprobs_json(m, tokens, tok, text_offset) : json(nullptr);
    if (m.chat) {
        json delta = json::object();
        if (first) delta["role"] = "assistant";
        if (!text.empty() || (first && finish.empty())) delta["content"] = text;
        if (!reasoning.empty()) delta["reasoning_content"] = reasoning;
        choice["delta"] = delta;
    } else {
        choice["text"] = text;
    }
    return {{"id", m.id},
            {"object", m.chat ? "chat.completion.chunk" : "text_completion"},
            {"created", m.created},
            {"model", m.model},
            {"choices", json::array({choice})}};
}

json tool_calls_chunk(const ResponseMeta& m, int index, const json& calls, bool first) {
    json delta = {{"tool_calls", calls}};
    if (first) delta["role"] = "assistant";
    return {{"id", m.id},
            {"object", "chat.completion.chunk"},
            {"created", m.created},
            {"model", m.model},
            {"choices", json::array({{{"index", index}, {"delta", delta}, {"logprobs", nullptr}, {"finish_reason", nullptr}}})}};
}

json usage_chunk(const ResponseMeta& m, const Usage& u) {
    return {{"id", m.id},
            {"object", m.chat ? "chat.completion.chunk" : "text_completion"},
            {"created", m.created},
            {"model", m.model},
            {"choices", json::array()},
            {"usage", usage_json(u)}};
}

}  // namespace ls::server
