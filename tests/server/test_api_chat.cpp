// Chat requests for templates whose replies hold reasoning: the prompt parse_chat builds, the
// thinking and effort options, harmony's end-of-generation tokens, and the reasoning_content
// of responses and stream chunks. No model: a tiny byte-level vocabulary with the harmony and
// ChatML special tokens.
#include <catch2/catch.hpp>

#include "core/runtime/generate.h"
#include "core/text/tokenizer.h"
#include "tests/support/byte_vocab.h"
#include "tools/server/api_request.h"
#include "tools/server/api_response.h"
#include "core/text/stop_text.h"

using namespace ls;
using namespace ls::server;
using nlohmann::json;

namespace {

Tokenizer harmony_vocab() {
    std::vector<std::pair<std::string, int32_t>> specials;
    for (const char* t : {"<|start|>", "<|message|>", "<|end|>", "<|channel|>", "<|return|>", "<|call|>", "<|im_start|>", "<|im_end|>",
                          "<think>", "</think>"})
        specials.emplace_back(t, std::string_view(t).starts_with("<|") ? 3 : 4);
    Vocab v = test::byte_vocab(specials);
    v.pre = "gpt-4o";
    v.eos_id = int32_t(v.tokens.size()) - 6;  // <|return|>
    return Tokenizer(std::move(v));
}

}  // namespace

TEST_CASE("server chat: harmony prompt, options and end-of-generation tokens", "[server][chat]") {
    const Tokenizer tok = harmony_vocab();
    // <|end|> closes a message, not the reply: <|return|> and <|call|> end generation.
    CHECK_FALSE(tok.is_eog(tok.find_token("<|end|>")));
    CHECK(tok.is_eog(tok.find_token("<|return|>")));
    CHECK(tok.is_eog(tok.find_token("<|call|>")));

    ApiContext ctx;
    ctx.tok = &tok;
    ctx.arch = "gpt-oss";
    ctx.n_ctx = 4096;
    ctx.chat = &chat_template_for(ctx.arch, [&](std::string_view t) { return tok.find_token(t) >= 0; });
    json body = {{"messages", {{{"role", "system"}, {"content", "Be brief."}}, {{"role", "user"}, {"content", "Hi"}}}},
                 {"reasoning_effort", "low"}};
    GenRequest r = parse_chat(body, ctx);
    CHECK(r.job.reply_template == ctx.chat);
    const std::string prompt = tok.decode(r.job.prompt);
    CHECK(prompt.find("Reasoning: low\n\n") != std::string::npos);
    CHECK(prompt.find("<|start|>developer<|message|># Instructions\n\nBe brief.\n\n<|end|><|start|>user<|message|>Hi<|end|><|start|>assistant") !=
          std::string::npos);
    CHECK(prompt.ends_with("<|start|>assistant"));
    body["chat_template_kwargs"] = {{"reasoning_effort", "high"}};
    CHECK(tok.decode(parse_chat(body, ctx).job.prompt).find("Reasoning: high\n\n") != std::string::npos);
    body["reasoning_effort"] = "extreme";
    CHECK_THROWS_AS(parse_chat(body, ctx), ApiError);
    body["reasoning_effort"] = "medium";
    body["chat_template_kwargs"] = "yes";
    CHECK_THROWS_AS(parse_chat(body, ctx), ApiError);
}

TEST_CASE("server chat: Qwen 3 thinking from chat_template_kwargs or the soft switch", "[server][chat]") {
    const Tokenizer tok = harmony_vocab();
    ApiContext ctx;
    ctx.tok = &tok;
    ctx.arch = "qwen3";
    ctx.n_ctx = 4096;
    json body = {{"messages", {{{"role", "user"}, {"content", "Hi"}}}}};
    const auto prompt = [&] { return tok.decode(parse_chat(body, ctx).job.prompt); };
    CHECK(prompt().ends_with("<|im_start|>assistant\n<think>\n\n</think>\n\n"));
    CHECK(parse_chat(body, ctx).job.reply_template == &chat_template_for("qwen3"));
    body["chat_template_kwargs"] = {{"enable_thinking", true}};
    CHECK(prompt().ends_with("<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n"));
    body["chat_template_kwargs"] = {{"enable_thinking", false}};
    body["messages"][0]["content"] = "Hi /think";
    CHECK(prompt().ends_with("<think>\n\n</think>\n\n"));
    body.erase("chat_template_kwargs");
    CHECK(prompt().ends_with("Hi /think<|im_end|>\n<|im_start|>assistant\n"));
    // A template without reasoning markers reads replies as before.
    ctx.arch = "llama";
    CHECK(parse_chat(body, ctx).job.reply_template == nullptr);
}

TEST_CASE("server chat: reasoning_content in responses and stream chunks", "[server][chat]") {
    const Tokenizer tok = harmony_vocab();
    ResponseMeta m;
    m.chat = true;
    m.id = "x";
    json full = full_response(m, {ChoiceOut{"Hello", "The user greets.", {}, "stop", {}}}, Usage{}, tok);
    CHECK(full["choices"][0]["message"]["content"] == "Hello");
    CHECK(full["choices"][0]["message"]["reasoning_content"] == "The user greets.");
    CHECK_FALSE(full_response(m, {ChoiceOut{"Hello", "", {}, "stop", {}}}, Usage{}, tok)["choices"][0]["message"].contains("reasoning_content"));
    json chunk = stream_chunk(m, 0, "", {}, "", false, 0, tok, "thinking");
    CHECK(chunk["choices"][0]["delta"]["reasoning_content"] == "thinking");
    CHECK_FALSE(chunk["choices"][0]["delta"].contains("content"));
}

TEST_CASE("server stop text: more bytes of the last token", "[server]") {
    StopText s({"END"});
    CHECK(s.push("ab").text == "ab");
    StopText::Out o = s.push("cE", false);  // held: "E" may begin END
    CHECK(o.text == "c");
    o = s.push("ND!", false);
    CHECK(o.stopped);
    CHECK(o.text.empty());
    StopText t;
    CHECK(t.push("x", false).tokens == std::vector<size_t>{0});  // no token yet: it is one
}

TEST_CASE("reply_piece: control tokens are rendered only where a reply marker has them", "[server][chat]") {
    const Tokenizer tok = harmony_vocab();
    const ChatTemplate& harmony = chat_template_for("gpt-oss");
    const int32_t channel = tok.find_token("<|channel|>"), im_start = tok.find_token("<|im_start|>"), a = tok.find_token("a");
    CHECK(reply_piece(tok, channel, &harmony) == "<|channel|>");
    CHECK(reply_piece(tok, im_start, &harmony).empty());  // not harmony's: stays out as before
    CHECK(reply_piece(tok, a, &harmony) == "a");
    CHECK(reply_piece(tok, channel, nullptr).empty());
}

TEST_CASE("server logprobs: byte pieces keep distinct keys in a completion's top_logprobs", "[server]") {
    // Three alternatives, two of them a UTF-8 character's first byte only: written as text, both
    // became U+FFFD, one JSON object with two equal keys.
    const Tokenizer tok = harmony_vocab();
    TokenOut t;
    t.id = 0xe2;
    t.piece = "\xe2";
    t.logprob = -0.5f;
    t.top = {{0xe2, -0.5f}, {0xe3, -1.5f}, {'A', -2.5f}};
    ResponseMeta m;
    m.logprobs = true;
    const nlohmann::json lp = nlohmann::json::parse(dump(logprobs_json(m, {t}, tok, 0)));
    CHECK(lp["tokens"][0] == "bytes:\\xe2");
    const nlohmann::json& top = lp["top_logprobs"][0];
    REQUIRE(top.size() == 3);
    CHECK(top["bytes:\\xe2"] == -0.5f);
    CHECK(top["bytes:\\xe3"] == -1.5f);
    CHECK(top["A"] == -2.5f);
    // The chat form gives each alternative its bytes.
    m.chat = true;
    const nlohmann::json c = logprobs_json(m, {t}, tok, 0);
    CHECK(c["content"][0]["top_logprobs"][1]["bytes"] == nlohmann::json::array({0xe3}));
}

TEST_CASE("tokenizer: the most bytes a token can stand for bounds a prompt's tokens", "[server]") {
    const Tokenizer tok = harmony_vocab();
    CHECK(tok.max_bytes_per_token() == std::string("<|im_start|>").size());  // its longest token
    // Without every byte and without an unknown token a character can vanish: no bound.
    Vocab v;
    v.kind = TokenizerKind::BytePairGpt2;
    v.tokens = {"a", "b"};
    CHECK(Tokenizer(std::move(v)).max_bytes_per_token() == 0);
}

TEST_CASE("server errors: a message keeps what follows a NUL the client sent", "[server]") {
    const std::string key("ab\0cd", 5);
    try {
        throw ApiError(400, "'logit_bias' key '" + key + "' is not a token id");
    } catch (const ApiError& e) {
        CHECK(e.message.size() == std::string("'logit_bias' key '").size() + 5 + std::string("' is not a token id").size());
        CHECK(e.message.find("cd") != std::string::npos);
    }
}
