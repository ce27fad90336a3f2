// ReplyReader: a reply read token by token as the server's pipeline reads it (reasoning split
// by the template's markers, stop strings on the visible text, tool calls out of what
// remains), whatever the tokens' split.
#include <catch2/catch.hpp>

#include "core/chat/reply_reader.h"
#include "tests/support/byte_vocab.h"

using namespace ls;
using namespace ls::chat;

namespace {

Tokenizer think_vocab() {
    Vocab v = test::byte_vocab({{"<|im_start|>", 3}, {"<|im_end|>", 3}, {"<think>", 3}, {"</think>", 3}, {"<tool_call>", 3}, {"</tool_call>", 3}});
    v.pre = "gpt-4o";
    return Tokenizer(std::move(v));
}

struct Read {
    Message msg;
    std::vector<Event> events;
    bool stopped = false;
};

Read read(const Tokenizer& tok, const std::string& reply, ReplyReaderOptions o) {
    ReplyReader r(tok, std::move(o));
    Read out;
    for (int32_t id : tok.encode(reply, false, true)) {
        for (Event& e : r.push(id)) out.events.push_back(std::move(e));
        if (r.stopped()) break;
    }
    for (Event& e : r.finish()) out.events.push_back(std::move(e));
    out.msg.apply(out.events);
    out.stopped = r.stopped();
    return out;
}

}  // namespace

TEST_CASE("reply reader: reasoning split by the template's markers, token by token", "[chat]") {
    const Tokenizer tok = think_vocab();
    ReplyReaderOptions o;
    o.reasoning = &chat_template_for("qwen3");
    const Read r = read(tok, "<think>\nThe user greets.\n</think>\n\nHello there.", o);
    CHECK(r.msg.reasoning == "The user greets.");
    CHECK(r.msg.content == "Hello there.");
    CHECK(r.msg.tool_calls.empty());
    // Reasoning comes before the content, and nothing of a marker shows.
    REQUIRE(!r.events.empty());
    CHECK(r.events.front().kind == Event::Reasoning);
    for (const Event& e : r.events) CHECK(e.text.find("think>") == std::string::npos);

    // Without the markers' template, the control tokens give no text and nothing is split.
    const Read plain = read(tok, "<think>\nx\n</think>\n\nHello", {});
    CHECK(plain.msg.reasoning.empty());
    CHECK(plain.msg.content == "\nx\n\n\nHello");
}

TEST_CASE("reply reader: stop strings end the visible text only", "[chat]") {
    const Tokenizer tok = think_vocab();
    ReplyReaderOptions o;
    o.reasoning = &chat_template_for("qwen3");
    o.stops = {"STOP"};
    // A stop string inside the reasoning does not stop (the server matches the content only).
    const Read r = read(tok, "<think>\nno STOP here\n</think>\n\nHello STOP and more", o);
    CHECK(r.msg.reasoning == "no STOP here");
    CHECK(r.msg.content == "Hello ");
    CHECK(r.stopped);
}

TEST_CASE("reply reader: tool calls out of the visible text, announced then argued, as the whole reply parses", "[chat]") {
    const Tokenizer tok = think_vocab();
    ReplyReaderOptions o;
    o.reasoning = &chat_template_for("qwen3");
    o.tools = Format::Hermes;
    o.parser.make_id = [](size_t i) { return "call_x_" + std::to_string(i); };
    const std::string reply =
        "<think>\nLook it up.\n</think>\n\nLet me check.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>";
    const Read r = read(tok, reply, o);
    CHECK(r.msg.reasoning == "Look it up.");
    REQUIRE(r.msg.tool_calls.size() == 1);
    CHECK(r.msg.tool_calls[0].name == "get_weather");
    CHECK(r.msg.tool_calls[0].id == "call_x_0");
    CHECK(nlohmann::json::parse(r.msg.tool_calls[0].arguments) == nlohmann::json{{"city", "Paris"}});
    // The same message as the whole visible reply read at once.
    const Message whole = parse_reply(Format::Hermes, "Let me check.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>",
                                      o.parser);
    CHECK(r.msg.content == whole.content);
    CHECK(r.msg.tool_calls == whole.tool_calls);
    int starts = 0;
    for (const Event& e : r.events) starts += e.kind == Event::CallStart;
    CHECK(starts == 1);
}
