// Chat templates: the exact text each family's template renders (the expected strings are
// read off the published jinja templates, see chat_template.cpp), the thinking switch, and
// ReplySplitter separating reasoning from the visible reply.
#include <catch2/catch.hpp>
#include <algorithm>

#include "core/text/chat_template.h"

using namespace ls;

namespace {

// A system prompt and three turns (user, assistant, user), with stray whitespace that the
// templates which trim must trim.
const std::vector<ChatMsg> kConv = {
    {"system", "Be brief. "}, {"user", " Hi there "}, {"assistant", "Hello!\n"}, {"user", "Bye"}};

ChatOptions fixed_date() {
    ChatOptions o;
    o.date = "2025-08-05";
    return o;
}

// Feeds `reply` to a splitter in pieces of `step` bytes and joins what comes out.
ReplySplitter::Out split_all(const ChatTemplate& t, const std::string& reply, size_t step) {
    ReplySplitter sp(t);
    ReplySplitter::Out all;
    for (size_t i = 0; i < reply.size(); i += step) {
        ReplySplitter::Out o = sp.push(std::string_view(reply).substr(i, step));
        all.content += o.content;
        all.reasoning += o.reasoning;
    }
    ReplySplitter::Out o = sp.finish();
    all.content += o.content;
    all.reasoning += o.reasoning;
    return all;
}

}  // namespace

TEST_CASE("format_chat: Gemma 2/3, Gemma 4 and ChatML", "[tokenizer][chat]") {
    std::vector<ChatMsg> msgs = {{"system", "Be brief."}, {"user", "Hi there "}, {"assistant", "Hello!"}, {"user", "Bye"}};
    const std::string gemma =
        "<start_of_turn>user\nBe brief.\n\nHi there<end_of_turn>\n"
        "<start_of_turn>model\nHello!<end_of_turn>\n"
        "<start_of_turn>user\nBye<end_of_turn>\n";
    CHECK(format_chat(msgs, true, "gemma3") == gemma + "<start_of_turn>model\n");
    // Gemma 2 (google/gemma-2-2b-it): the same turns; its template refuses a system role, the
    // Gemma 3 way of folding it into the first turn is kept.
    CHECK(format_chat(msgs, true, "gemma2") == gemma + "<start_of_turn>model\n");
    CHECK(format_chat(msgs, false, "gemma2") == gemma);
    CHECK(&chat_template_for("gemma2") == &chat_template_for("gemma3"));
    CHECK(format_chat({{"user", "hi"}}, false, "gemma") == "<start_of_turn>user\nhi<end_of_turn>\n");
    CHECK(format_chat(msgs, true, "gemma4") ==
          "<|turn>system\nBe brief.<turn|>\n"
          "<|turn>user\nHi there<turn|>\n"
          "<|turn>model\nHello!<turn|>\n"
          "<|turn>user\nBye<turn|>\n"
          "<|turn>model\n<|channel>thought\n<channel|>");
    // A model turn's thinking is not part of the history.
    CHECK(format_chat({{"user", "q"}, {"assistant", "<|channel>thought\nhmm<channel|>A."}}, false, "gemma4") ==
          "<|turn>user\nq<turn|>\n<|turn>model\nA.<turn|>\n");
    CHECK(format_chat(msgs, true, "qwen35") ==
          "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi there <|im_end|>\n"
          "<|im_start|>assistant\nHello!<|im_end|>\n<|im_start|>user\nBye<|im_end|>\n<|im_start|>assistant\n");
}

TEST_CASE("format_chat: Llama 3", "[tokenizer][chat]") {
    // meta-llama/Llama-3.1-8B-Instruct's template without tools: the system turn always comes,
    // with the knowledge cutoff and the template's default date; contents trimmed.
    const std::string sys =
        "<|start_header_id|>system<|end_header_id|>\n\nCutting Knowledge Date: December 2023\nToday Date: 26 Jul 2024\n\n";
    const std::string turns =
        "<|start_header_id|>user<|end_header_id|>\n\nHi there<|eot_id|>"
        "<|start_header_id|>assistant<|end_header_id|>\n\nHello!<|eot_id|>"
        "<|start_header_id|>user<|end_header_id|>\n\nBye<|eot_id|>";
    const std::string gen = "<|start_header_id|>assistant<|end_header_id|>\n\n";
    CHECK(format_chat(kConv, false, "llama") == sys + "Be brief.<|eot_id|>" + turns);
    CHECK(format_chat(kConv, true, "llama") == sys + "Be brief.<|eot_id|>" + turns + gen);
    const std::vector<ChatMsg> no_system(kConv.begin() + 1, kConv.end());
    CHECK(format_chat(no_system, true, "llama") == sys + "<|eot_id|>" + turns + gen);
}

TEST_CASE("format_chat: Qwen 3, thinking off unless switched on", "[tokenizer][chat]") {
    // Qwen/Qwen3-0.6B's template without tools, enable_thinking=false by default.
    const std::string turns =
        "<|im_start|>system\nBe brief. <|im_end|>\n"
        "<|im_start|>user\n Hi there <|im_end|>\n"
        "<|im_start|>assistant\nHello!\n<|im_end|>\n"
        "<|im_start|>user\nBye<|im_end|>\n";
    for (const char* arch : {"qwen3", "qwen3moe"}) {
        INFO(arch);
        CHECK(format_chat(kConv, false, arch) == turns);
        CHECK(format_chat(kConv, true, arch) == turns + "<|im_start|>assistant\n<think>\n\n</think>\n\n");
    }
    const ChatTemplate& t = chat_template_for("qwen3");
    // An earlier reply's think block (and the newlines after it) leave the history.
    CHECK(format_chat({{"user", "q"}, {"assistant", "<think>\nhmm\n</think>\n\nA."}, {"user", "r"}}, false, t) ==
          "<|im_start|>user\nq<|im_end|>\n<|im_start|>assistant\nA.<|im_end|>\n<|im_start|>user\nr<|im_end|>\n");
    // The soft switch: the last /think or /no_think written in a user or system message.
    const std::string on = "<|im_start|>assistant\n", off = on + "<think>\n\n</think>\n\n";
    const auto gen = [&](const std::vector<ChatMsg>& m, ChatOptions o = {}) {
        const std::string s = format_chat(m, true, t, o);
        return s.substr(s.rfind("<|im_start|>assistant\n"));
    };
    CHECK(gen({{"user", "why? /think"}}) == on);
    CHECK(gen({{"user", "why? /no_think"}}) == off);
    CHECK(gen({{"system", "/think"}, {"user", "why?"}}) == on);
    CHECK(gen({{"user", "a /think"}, {"assistant", "x"}, {"user", "b /no_think"}}) == off);
    CHECK(gen({{"user", "a /no_think"}, {"assistant", "x"}, {"user", "b"}}) == off);
    CHECK(gen({{"user", "a /no_think then /think"}}) == on);
    CHECK(gen({{"user", "a /think"}, {"assistant", "x"}, {"user", "b"}}) == on);
    // A request's explicit choice wins.
    ChatOptions force_on, force_off;
    force_on.thinking = 1;
    force_off.thinking = 0;
    CHECK(gen({{"user", "why?"}}, force_on) == on);
    CHECK(gen({{"user", "why? /think"}}, force_off) == off);
    CHECK(chat_thinking({{"user", "x /think"}}, t));
    // Families without a switch ignore it.
    CHECK_FALSE(chat_thinking({{"user", "x /think"}}, chat_template_for("llama")));
    CHECK(format_chat({{"user", "x /think"}}, true, "qwen35") == "<|im_start|>user\nx /think<|im_end|>\n<|im_start|>assistant\n");
}

TEST_CASE("format_chat: gpt-oss harmony", "[tokenizer][chat]") {
    // openai/gpt-oss-120b's template without tools: the system message with the date and the
    // reasoning effort, the user's system prompt as developer instructions, earlier replies
    // as their final channel; a reply that ends the conversation closes with <|return|>.
    const std::string system =
        "<|start|>system<|message|>You are ChatGPT, a large language model trained by OpenAI.\n"
        "Knowledge cutoff: 2024-06\nCurrent date: 2025-08-05\n\nReasoning: medium\n\n"
        "# Valid channels: analysis, commentary, final. Channel must be included for every message.<|end|>";
    const std::string dev = "<|start|>developer<|message|># Instructions\n\nBe brief. \n\n<|end|>";
    const std::string turns =
        "<|start|>user<|message|> Hi there <|end|>"
        "<|start|>assistant<|channel|>final<|message|>Hello!\n<|end|>"
        "<|start|>user<|message|>Bye<|end|>";
    CHECK(format_chat(kConv, false, "gpt-oss", fixed_date()) == system + dev + turns);
    CHECK(format_chat(kConv, true, "gpt-oss", fixed_date()) == system + dev + turns + "<|start|>assistant");
    const std::vector<ChatMsg> no_system(kConv.begin() + 1, kConv.end());
    CHECK(format_chat(no_system, true, "gpt-oss", fixed_date()) == system + turns + "<|start|>assistant");
    CHECK(format_chat({{"user", "q"}, {"assistant", "A."}}, false, "gpt-oss", fixed_date()) ==
          system + "<|start|>user<|message|>q<|end|><|start|>assistant<|channel|>final<|message|>A.<|return|>");
    ChatOptions high = fixed_date();
    high.reasoning_effort = "high";
    CHECK(format_chat({{"user", "q"}}, true, "gpt-oss", high).find("\n\nReasoning: high\n\n") != std::string::npos);
    // Without a date, today's.
    const std::string today = format_chat({{"user", "q"}}, true, "gpt-oss");
    const size_t at = today.find("Current date: ");
    REQUIRE(at != std::string::npos);
    const std::string d = today.substr(at + 14, 10);
    CHECK(d.size() == 10);
    CHECK(d[4] == '-');
    CHECK(d[7] == '-');
    CHECK(today.substr(at + 24, 2) == "\n\n");
}

TEST_CASE("chat_template_for: the vocabulary picks among an architecture's families", "[tokenizer][chat]") {
    const auto vocab = [](std::vector<std::string_view> toks) {
        return [toks](std::string_view t) { return std::find(toks.begin(), toks.end(), t) != toks.end(); };
    };
    // Llama 3 has its header tokens; SmolLM2 (also "llama") has ChatML's.
    CHECK(&chat_template_for("llama", vocab({"<|start_header_id|>", "<|eot_id|>"})) == &chat_template_for("llama"));
    CHECK(&chat_template_for("llama", vocab({"<|im_start|>", "<|im_end|>"})) == &chat_template_for("unknown-arch"));
    CHECK(&chat_template_for("gpt-oss", vocab({"<|start|>"})) == &chat_template_for("gpt-oss"));
    // Nothing fits: the architecture's.
    CHECK(&chat_template_for("llama", vocab({})) == &chat_template_for("llama"));
}

TEST_CASE("ReplySplitter: gpt-oss analysis is reasoning, the final channel is the reply", "[tokenizer][chat]") {
    const ChatTemplate& t = chat_template_for("gpt-oss");
    REQUIRE(t.has_reasoning());
    const std::string reply =
        "<|channel|>analysis<|message|>The user says bye. Answer briefly.<|end|>"
        "<|start|>assistant<|channel|>final<|message|>Goodbye!";
    for (size_t step : {1, 2, 3, 7, 1000}) {
        INFO("step " << step);
        ReplySplitter::Out o = split_all(t, reply, step);
        CHECK(o.content == "Goodbye!");
        CHECK(o.reasoning == "The user says bye. Answer briefly.");
    }
    // Straight to the final channel.
    CHECK(split_all(t, "<|channel|>final<|message|>Hi.", 4).content == "Hi.");
    CHECK(split_all(t, "<|channel|>final<|message|>Hi.", 4).reasoning.empty());
    // Text that only looks like the start of a marker is released at the end.
    ReplySplitter::Out o = split_all(t, "<|channel|>final<|message|>a <|cha", 1);
    CHECK(o.content == "a <|cha");
    // Reasoning cut off by the length limit stays reasoning.
    o = split_all(t, "<|channel|>analysis<|message|>thinking...", 5);
    CHECK(o.content.empty());
    CHECK(o.reasoning == "thinking...");
}

TEST_CASE("ReplySplitter: Qwen 3 think block, Gemma 4 thought channel", "[tokenizer][chat]") {
    const ChatTemplate& q = chat_template_for("qwen3");
    for (size_t step : {1, 4, 1000}) {
        INFO("step " << step);
        ReplySplitter::Out o = split_all(q, "<think>\nLet me think.\nDone.\n</think>\n\nThe answer is 4.", step);
        CHECK(o.reasoning == "Let me think.\nDone.");
        CHECK(o.content == "The answer is 4.");
    }
    // Thinking off: the prompt closed the empty block, the reply is all content.
    ReplySplitter::Out o = split_all(q, "Plain answer.\n\nWith <b>tags</b> and <thin ice>.", 3);
    CHECK(o.content == "Plain answer.\n\nWith <b>tags</b> and <thin ice>.");
    CHECK(o.reasoning.empty());
    const ChatTemplate& g = chat_template_for("gemma4");
    o = split_all(g, "<|channel>thought\nhmm<channel|>A.", 2);
    CHECK(o.reasoning == "hmm");
    CHECK(o.content == "A.");
    // Templates without reasoning markers.
    CHECK_FALSE(chat_template_for("llama").has_reasoning());
    CHECK_FALSE(chat_template_for("gemma3").has_reasoning());
    CHECK_FALSE(chat_template_for("qwen35").has_reasoning());
}
