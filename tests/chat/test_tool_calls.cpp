// Tool calls read out of model replies, per format: single and parallel calls, content before
// a call, reasoning, non-ASCII and escaped JSON, malformed output, markers split across pieces
// and text that only looks like a marker; every reply pushed whole, byte by byte and in random
// splits must give the same events. Then format detection over the real templates, and the
// forced-call grammars.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <filesystem>
#include <functional>
#include <map>
#include <fstream>
#include <random>
#include <sstream>

#include "core/chat/tool_grammar.h"
#include "core/chat/tool_parse.h"
#include "core/chat/tool_prompt.h"

using namespace ls::chat;
using nlohmann::ordered_json;

namespace {

struct Run {
    std::vector<Event> events;
    Message msg;
    std::optional<ParseError> error;
};

// Adjacent text of one kind, and argument pieces of one call, joined.
std::vector<Event> joined(const std::vector<Event>& es) {
    std::vector<Event> out;
    for (const Event& e : es) {
        if (!out.empty() && out.back().kind == e.kind &&
            (e.kind == Event::Content || e.kind == Event::Reasoning || (e.kind == Event::CallArgs && out.back().index == e.index))) {
            out.back().text += e.text;
            continue;
        }
        out.push_back(e);
    }
    return out;
}

ParserOptions options(std::vector<ToolSpec> tools = {}) {
    ParserOptions o;
    o.make_id = [](size_t i) { return "call_s" + std::to_string(i); };
    o.tools = std::move(tools);
    return o;
}

Run run_split(Format f, std::string_view text, const std::vector<size_t>& cuts, const ParserOptions& opt) {
    ToolCallParser p(f, opt);
    Run r;
    size_t at = 0;
    for (size_t cut : cuts) {
        auto es = p.push(text.substr(at, cut - at));
        r.events.insert(r.events.end(), es.begin(), es.end());
        at = cut;
    }
    auto es = p.push(text.substr(at));
    r.events.insert(r.events.end(), es.begin(), es.end());
    es = p.finish();
    r.events.insert(r.events.end(), es.begin(), es.end());
    r.events = joined(r.events);
    r.msg.apply(r.events);
    r.error = p.error();
    return r;
}

std::string describe(const std::vector<Event>& es);

// Parses `text` whole, then byte by byte and in random splits, and checks they agree.
Run parse(Format f, std::string_view text, const ParserOptions& opt = options()) {
    Run whole = run_split(f, text, {}, opt);
    std::vector<size_t> bytes;
    for (size_t i = 1; i < text.size(); ++i) bytes.push_back(i);
    Run bw = run_split(f, text, bytes, opt);
    INFO("format " << format_name(f) << ", byte by byte: " << text);
    CHECK(describe(bw.events) == describe(whole.events));
    CHECK(bw.error.has_value() == whole.error.has_value());
    std::mt19937 rng(1234);
    for (int t = 0; t < 20 && text.size() > 2; ++t) {
        std::vector<size_t> cuts;
        for (size_t i = 1; i < text.size(); ++i)
            if (rng() % 5 == 0) cuts.push_back(i);
        Run r = run_split(f, text, cuts, opt);
        INFO("random split " << t);
        CHECK(describe(r.events) == describe(whole.events));
        CHECK(r.error.has_value() == whole.error.has_value());
    }
    return whole;
}

// Events as text, for failure messages.
std::string describe(const std::vector<Event>& es) {
    std::string o;
    for (const Event& e : es) {
        const char* k[] = {"content", "reasoning", "call", "args"};
        o += std::string("[") + k[e.kind] + " " + std::to_string(e.index) + " " + e.id + " " + e.name + " |" + e.text + "|]\n";
    }
    return o;
}

ordered_json args(const Message& m, size_t i) { return ordered_json::parse(m.tool_calls.at(i).arguments); }

void check_call(const Message& m, size_t i, const std::string& name, const ordered_json& a) {
    REQUIRE(m.tool_calls.size() > i);
    CHECK(m.tool_calls[i].name == name);
    CHECK(args(m, i) == a);
}

std::filesystem::path templates_dir() {
    if (const char* e = std::getenv("LOCKSTEP_CHAT_TEMPLATES")) return e;
    // <source>/../shared/data/chat-templates (a relative __FILE__ is taken from the working directory)
    return std::filesystem::absolute(__FILE__).parent_path().parent_path().parent_path().parent_path() / "shared/data/chat-templates";
}

std::string read_text(const std::filesystem::path& p) {
    std::ifstream in(p, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

const ordered_json kParis = {{"city", "Paris"}};

}  // namespace

TEST_CASE("hermes: calls between <tool_call> tags", "[tools]") {
    SECTION("a single call, ids from the caller") {
        Run r = parse(Format::Hermes, "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>");
        CHECK_FALSE(r.error);
        CHECK(r.msg.content.empty());
        check_call(r.msg, 0, "get_weather", kParis);
        CHECK(r.msg.tool_calls[0].id == "call_s0");
        // announced once, then its arguments
        REQUIRE(r.events.size() == 2);
        CHECK(r.events[0].kind == Event::CallStart);
        CHECK(r.events[1].text == "{\"city\": \"Paris\"}");
    }
    SECTION("content before, parallel calls, whitespace between dropped") {
        Run r = parse(Format::Hermes,
                      "Let me check both.\n\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>\n"
                      "<tool_call>\n{\"name\": \"get_time\", \"arguments\": {\"tz\": \"Europe/Paris\"}}\n</tool_call>\n");
        CHECK_FALSE(r.error);
        CHECK(r.msg.content == "Let me check both.");
        check_call(r.msg, 0, "get_weather", kParis);
        check_call(r.msg, 1, "get_time", {{"tz", "Europe/Paris"}});
        CHECK(r.msg.tool_calls[1].id == "call_s1");
    }
    SECTION("non-ASCII and escapes in arguments, arguments before name") {
        Run r = parse(Format::Hermes,
                      "<tool_call>{\"arguments\": {\"q\": \"caf\\u00e9 \\\"crème\\\" 東京 }{\", \"n\": [1, {\"a\": null}]}, \"name\": \"search\"}</tool_call>");
        CHECK_FALSE(r.error);
        check_call(r.msg, 0, "search", {{"q", "café \"crème\" 東京 }{"}, {"n", {1, {{"a", nullptr}}}}});
    }
    SECTION("arguments as a JSON string") {
        Run r = parse(Format::Hermes, "<tool_call>{\"name\": \"f\", \"arguments\": \"{\\\"x\\\": 1}\"}</tool_call>");
        check_call(r.msg, 0, "f", {{"x", 1}});
    }
    SECTION("several objects in one block, closer missing at the end") {
        Run r = parse(Format::Hermes, "<tool_call>\n{\"name\": \"a\", \"arguments\": {}}\n{\"name\": \"b\", \"arguments\": {\"k\": true}}");
        CHECK_FALSE(r.error);
        check_call(r.msg, 0, "a", ordered_json::object());
        check_call(r.msg, 1, "b", {{"k", true}});
    }
    SECTION("text that looks like a marker is content") {
        Run r = parse(Format::Hermes, "Use <tool_ca or <tool_call> tags, like <tool_call>this</tool_call>. a<b");
        CHECK_FALSE(r.error);
        CHECK(r.msg.tool_calls.empty());
        CHECK(r.msg.content == "Use <tool_ca or <tool_call> tags, like <tool_call>this</tool_call>. a<b");
    }
    SECTION("malformed arguments after the call was announced: an error") {
        Run r = parse(Format::Hermes, "<tool_call>{\"name\": \"f\", \"arguments\": {\"x\": 1,, }}</tool_call>");
        REQUIRE(r.error);
        CHECK(r.error->call_index == 0);
        REQUIRE(r.msg.tool_calls.size() == 1);
    }
    SECTION("a call cut off by the end of the reply: an error") {
        Run r = parse(Format::Hermes, "<tool_call>{\"name\": \"f\", \"arguments\": {\"x\": ");
        REQUIRE(r.error);
    }
    SECTION("a marker split across pieces never reaches the content") {
        ToolCallParser p(Format::Hermes, options());
        Message m;
        m.apply(p.push("Sure.<tool_"));
        CHECK(m.content == "Sure.");
        m.apply(p.push("call>{\"name\""));
        CHECK(m.tool_calls.empty());
        m.apply(p.push(": \"f\", \"arguments\": {\"a\""));
        REQUIRE(m.tool_calls.size() == 1);
        CHECK(m.tool_calls[0].arguments == "{\"a\"");
        m.apply(p.push(": 1}}</tool_call>"));
        m.apply(p.finish());
        CHECK(m.content == "Sure.");
        CHECK(m.tool_calls[0].arguments == "{\"a\": 1}");
    }
}

TEST_CASE("qwen3-coder, seed-oss and glm: arguments as XML elements", "[tools]") {
    ToolSpec weather{"get_weather", "", ordered_json::parse(R"({"type":"object","properties":{"city":{"type":"string"},"zip":{"type":"string"},"days":{"type":"integer"}}})")};
    SECTION("qwen3-coder with typed values") {
        Run r = parse(Format::Qwen3Coder,
                      "I'll look.\n<tool_call>\n<function=get_weather>\n<parameter=city>\nSão Paulo \"centro\"\n</parameter>\n"
                      "<parameter=zip>\n01000\n</parameter>\n<parameter=days>\n3\n</parameter>\n</function>\n</tool_call>",
                      options({weather}));
        CHECK_FALSE(r.error);
        CHECK(r.msg.content == "I'll look.");
        check_call(r.msg, 0, "get_weather", {{"city", "São Paulo \"centro\""}, {"zip", "01000"}, {"days", 3}});
    }
    SECTION("qwen3-coder parallel, untyped values read as JSON where they are") {
        Run r = parse(Format::Qwen3Coder,
                      "<tool_call>\n<function=a>\n<parameter=n>\n42\n</parameter>\n<parameter=o>\n{\"x\": [1]}\n</parameter>\n</function>\n</tool_call>\n"
                      "<tool_call>\n<function=b>\n</function>\n</tool_call>");
        CHECK_FALSE(r.error);
        check_call(r.msg, 0, "a", {{"n", 42}, {"o", {{"x", {1}}}}});
        check_call(r.msg, 1, "b", ordered_json::object());
    }
    SECTION("qwen3-coder: a parameter never closed is an error") {
        Run r = parse(Format::Qwen3Coder, "<tool_call>\n<function=a>\n<parameter=n>\n42");
        CHECK(r.error);
    }
    SECTION("qwen3-coder: <tool_call> without a function is content") {
        Run r = parse(Format::Qwen3Coder, "write <tool_call> then <function=NAME> on its own line");
        CHECK(r.msg.tool_calls.empty());
        CHECK(r.msg.content == "write <tool_call> then <function=NAME> on its own line");
    }
    SECTION("seed-oss") {
        Run r = parse(Format::SeedOss, "<seed:tool_call>\n<function=get_weather>\n<parameter=city>Paris</parameter>\n</function>\n</seed:tool_call>");
        check_call(r.msg, 0, "get_weather", kParis);
    }
    SECTION("glm 4.5") {
        Run r = parse(Format::Glm45,
                      "Checking.\n<tool_call>get_weather\n<arg_key>city</arg_key>\n<arg_value>Paris</arg_value>\n<arg_key>days</arg_key>\n<arg_value>3</arg_value>\n</tool_call>"
                      "<tool_call>noargs\n</tool_call>");
        CHECK_FALSE(r.error);
        CHECK(r.msg.content == "Checking.");
        check_call(r.msg, 0, "get_weather", {{"city", "Paris"}, {"days", 3}});
        check_call(r.msg, 1, "noargs", ordered_json::object());
    }
}

TEST_CASE("llama 3.x: JSON calls and <|python_tag|>", "[tools]") {
    std::vector<ToolSpec> tools = {{"get_weather", "", {}}, {"get_time", "", {}}};
    SECTION("a call is the reply") {
        Run r = parse(Format::Llama3, "{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Paris\"}}", options(tools));
        CHECK_FALSE(r.error);
        CHECK(r.msg.content.empty());
        check_call(r.msg, 0, "get_weather", kParis);
    }
    SECTION("type: function, and two calls apart by ;") {
        Run r = parse(Format::Llama3,
                      " {\"type\": \"function\", \"name\": \"get_weather\", \"parameters\": {\"city\": \"Paris\"}}; {\"name\": \"get_time\", \"parameters\": {}}",
                      options(tools));
        CHECK_FALSE(r.error);
        check_call(r.msg, 0, "get_weather", kParis);
        check_call(r.msg, 1, "get_time", ordered_json::object());
    }
    SECTION("JSON that is not a call is content") {
        Run r = parse(Format::Llama3, "{\"name\": \"Bob\", \"age\": 3}", options(tools));
        CHECK(r.msg.tool_calls.empty());
        CHECK(r.msg.content == "{\"name\": \"Bob\", \"age\": 3}");
        Run r2 = parse(Format::Llama3, "{\"name\": \"unknown_fn\", \"parameters\": {}}", options(tools));
        CHECK(r2.msg.tool_calls.empty());
        Run r3 = parse(Format::Llama3, "The answer is {\"name\": \"get_time\"}.", options(tools));
        CHECK(r3.msg.tool_calls.empty());
    }
    SECTION("builtin tools after <|python_tag|>") {
        Run r = parse(Format::Llama3, "<|python_tag|>brave_search.call(query=\"weather in \\\"Paris\\\"\", n=3)");
        CHECK_FALSE(r.error);
        check_call(r.msg, 0, "brave_search", {{"query", "weather in \"Paris\""}, {"n", 3}});
        Run c = parse(Format::Llama3, "<|python_tag|>import math\nprint(math.pi)");
        check_call(c.msg, 0, "python", {{"code", "import math\nprint(math.pi)"}});
        Run j = parse(Format::Llama3, "Let me search.<|python_tag|>{\"name\": \"get_time\", \"parameters\": {}}");
        CHECK(j.msg.content == "Let me search.");
        check_call(j.msg, 0, "get_time", ordered_json::object());
    }
}

TEST_CASE("mistral: TOOL_CALLS in both forms", "[tools]") {
    SECTION("nemo: a JSON array with the model's ids") {
        Run r = parse(Format::MistralNemo,
                      "[TOOL_CALLS][{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}, \"id\": \"a1B2c3D4e\"}, "
                      "{\"name\": \"get_time\", \"arguments\": {}, \"id\": \"zzzzzzzz9\"}]");
        CHECK_FALSE(r.error);
        check_call(r.msg, 0, "get_weather", kParis);
        CHECK(r.msg.tool_calls[0].id == "a1B2c3D4e");
        CHECK(r.msg.tool_calls[1].id == "zzzzzzzz9");
    }
    SECTION("nemo: no id given") {
        Run r = parse(Format::MistralNemo, "[TOOL_CALLS] [{\"name\": \"f\", \"arguments\": {\"x\": \"ü\"}}]");
        check_call(r.msg, 0, "f", {{"x", "ü"}});
        CHECK(r.msg.tool_calls[0].id == "call_s0");
    }
    SECTION("nemo: not an array is content; broken array after a call is an error") {
        Run r = parse(Format::MistralNemo, "[TOOL_CALLS] none today");
        CHECK(r.msg.tool_calls.empty());
        CHECK(r.msg.content == "[TOOL_CALLS] none today");
        Run e = parse(Format::MistralNemo, "[TOOL_CALLS][{\"name\": \"f\", \"arguments\": {}} x");
        CHECK(e.error);
    }
    SECTION("v11: name[ARGS]json, several, content before") {
        Run r = parse(Format::Mistral,
                      "Checking.[TOOL_CALLS]get_weather[ARGS]{\"city\": \"Paris\"}[TOOL_CALLS]get_time[ARGS]{\"tz\": \"\\u6771\\u4eac\"}");
        CHECK_FALSE(r.error);
        CHECK(r.msg.content == "Checking.");
        check_call(r.msg, 0, "get_weather", kParis);
        check_call(r.msg, 1, "get_time", {{"tz", "東京"}});
    }
    SECTION("v11 with [CALL_ID]") {
        Run r = parse(Format::Mistral, "[TOOL_CALLS]get_weather[CALL_ID]Ab3dE6gh9[ARGS]{\"city\": \"Paris\"}");
        check_call(r.msg, 0, "get_weather", kParis);
        CHECK(r.msg.tool_calls[0].id == "Ab3dE6gh9");
    }
    SECTION("v11: arguments that are not JSON") {
        Run r = parse(Format::Mistral, "[TOOL_CALLS]f[ARGS]{\"a\": tru}");
        CHECK(r.error);
    }
}

TEST_CASE("gpt-oss harmony: channels and calls", "[tools]") {
    SECTION("reasoning, then a call") {
        Run r = parse(Format::Harmony,
                      "<|channel|>analysis<|message|>Need weather. Use tool.<|end|><|start|>assistant<|channel|>commentary to=functions.get_weather "
                      "<|constrain|>json<|message|>{\"city\":\"Paris\"}<|call|>");
        CHECK_FALSE(r.error);
        CHECK(r.msg.reasoning == "Need weather. Use tool.");
        CHECK(r.msg.content.empty());
        check_call(r.msg, 0, "get_weather", kParis);
    }
    SECTION("recipient before the channel, <|call|> left out by the server, then a final answer elsewhere") {
        Run r = parse(Format::Harmony, "<|channel|>analysis<|message|>x<|end|><|start|>assistant to=functions.f<|channel|>commentary json<|message|>{\"a\": [1, 2]}");
        CHECK_FALSE(r.error);
        check_call(r.msg, 0, "f", {{"a", {1, 2}}});
        Run f = parse(Format::Harmony, "<|channel|>analysis<|message|>Simple.<|end|><|start|>assistant<|channel|>final<|message|>Hello <|there|>!<|return|>");
        CHECK(f.msg.reasoning == "Simple.");
        CHECK(f.msg.content == "Hello <|there|>!");
        CHECK(f.msg.tool_calls.empty());
    }
    SECTION("a commentary preamble is content; parallel calls") {
        Run r = parse(Format::Harmony,
                      "<|channel|>commentary<|message|>Checking two cities.<|end|><|start|>assistant<|channel|>commentary to=functions.w <|constrain|>json<|message|>{\"city\":\"Paris\"}<|call|>"
                      "<|start|>assistant<|channel|>commentary to=functions.w <|constrain|>json<|message|>{\"city\":\"Oslo\"}<|call|>");
        CHECK(r.msg.content == "Checking two cities.");
        check_call(r.msg, 0, "w", kParis);
        check_call(r.msg, 1, "w", {{"city", "Oslo"}});
    }
    SECTION("bad arguments") {
        Run r = parse(Format::Harmony, "<|channel|>commentary to=functions.w <|constrain|>json<|message|>{city: Paris}<|call|>");
        CHECK(r.error);
    }
}

TEST_CASE("gemma 4: <|tool_call>call:name{...}<tool_call|>", "[tools]") {
    Run r = parse(Format::Gemma4,
                  "Let me check.<|tool_call>call:get_weather{city:<|\"|>Paris, \"FR\" {x}<|\"|>,days:3,opts:{metric:true,tags:[<|\"|>a<|\"|>,<|\"|>b<|\"|>]}}<tool_call|>"
                  "<|tool_call>call:get_time{}<tool_call|>");
    CHECK_FALSE(r.error);
    CHECK(r.msg.content == "Let me check.");
    check_call(r.msg, 0, "get_weather", {{"city", "Paris, \"FR\" {x}"}, {"days", 3}, {"opts", {{"metric", true}, {"tags", {"a", "b"}}}}});
    check_call(r.msg, 1, "get_time", ordered_json::object());
    Run t = parse(Format::Gemma4, "<|channel>thought\nhmm<channel|>The <|tool_call> marker is how I call tools.");
    CHECK(t.msg.tool_calls.empty());
    CHECK(t.msg.content == "<|channel>thought\nhmm<channel|>The <|tool_call> marker is how I call tools.");
    Run b = parse(Format::Gemma4, "<|tool_call>call:f{a:<|\"|>unterminated}<tool_call|>");
    CHECK(b.error);
}

TEST_CASE("generic JSON replies (gemma 3, phi, no native format)", "[tools]") {
    Run r = parse(Format::Generic, "{\"tool_calls\": [{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}, {\"name\": \"g\", \"arguments\": {}}]}");
    CHECK_FALSE(r.error);
    check_call(r.msg, 0, "get_weather", kParis);
    check_call(r.msg, 1, "g", ordered_json::object());
    Run one = parse(Format::Generic, "```json\n{\"tool_call\": {\"name\": \"f\", \"arguments\": {}}}\n```");
    CHECK(one.msg.tool_calls.empty());  // fenced: not the format, shown as written
    Run one2 = parse(Format::Generic, "{\"tool_call\": {\"name\": \"f\", \"arguments\": {\"s\": \"\\n\"}}}");
    check_call(one2.msg, 0, "f", {{"s", "\n"}});
    Run resp = parse(Format::Generic, "{\"response\": \"Hi \\\"there\\\" — ok\"}");
    CHECK(resp.msg.content == "Hi \"there\" — ok");
    Run plain = parse(Format::Generic, "Just text {not json}");
    CHECK(plain.msg.content == "Just text {not json}");
    Run broken = parse(Format::Generic, "{\"tool_calls\": [{\"name\": \"f\"");
    CHECK(broken.msg.content == "{\"tool_calls\": [{\"name\": \"f\"");
}

TEST_CASE("deepseek r1 and v3.1", "[tools]") {
    Run r = parse(Format::DeepSeekR1,
                  "I will call it.<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>get_weather\n```json\n{\"city\": \"Paris\"}\n```<｜tool▁call▁end｜>\n"
                  "<｜tool▁call▁begin｜>function<｜tool▁sep｜>get_time\n```json\n{}\n```<｜tool▁call▁end｜><｜tool▁calls▁end｜>");
    CHECK_FALSE(r.error);
    CHECK(r.msg.content == "I will call it.");
    check_call(r.msg, 0, "get_weather", kParis);
    check_call(r.msg, 1, "get_time", ordered_json::object());
    Run v = parse(Format::DeepSeekV31,
                  "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>get_weather<｜tool▁sep｜>{\"city\": \"Paris\"}<｜tool▁call▁end｜><｜tool▁call▁begin｜>f<｜tool▁sep｜>{\"q\": \"日本\"}<｜tool▁call▁end｜><｜tool▁calls▁end｜>");
    CHECK_FALSE(v.error);
    check_call(v.msg, 0, "get_weather", kParis);
    check_call(v.msg, 1, "f", {{"q", "日本"}});
    Run bad = parse(Format::DeepSeekV31, "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>f<｜tool▁sep｜>{\"q\": ");
    CHECK(bad.error);
}

TEST_CASE("granite, nemotron v2, apriel, firefunction, command-r7b: JSON arrays", "[tools]") {
    Run g = parse(Format::Granite, "<|tool_call|>[{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}, {\"name\": \"g\", \"arguments\": {}}]");
    CHECK_FALSE(g.error);
    check_call(g.msg, 0, "get_weather", kParis);
    check_call(g.msg, 1, "g", ordered_json::object());
    Run n = parse(Format::NemotronV2, "Sure. <TOOLCALL>[{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}]</TOOLCALL>");
    CHECK(n.msg.content == "Sure.");
    check_call(n.msg, 0, "get_weather", kParis);
    Run a = parse(Format::Apriel, "<tool_calls>[{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}]</tool_calls>");
    check_call(a.msg, 0, "get_weather", kParis);
    Run f = parse(Format::FireFunction, " functools[{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}]");
    check_call(f.msg, 0, "get_weather", kParis);
    Run c = parse(Format::CommandR7B,
                  "<|START_THINKING|>I should look it up.<|END_THINKING|><|START_ACTION|>[\n    {\"tool_call_id\": \"0\", \"tool_name\": \"get_weather\", \"parameters\": {\"city\": \"Paris\"}}\n]<|END_ACTION|>");
    CHECK_FALSE(c.error);
    CHECK(c.msg.reasoning == "I should look it up.");
    CHECK(c.msg.content.empty());
    check_call(c.msg, 0, "get_weather", kParis);
    Run cr = parse(Format::CommandR7B, "<|START_THINKING|>easy<|END_THINKING|><|START_RESPONSE|>Hello!<|END_RESPONSE|>");
    CHECK(cr.msg.content == "Hello!");
    CHECK(cr.msg.reasoning == "easy");
}

TEST_CASE("functionary v3.1 and v3.2, kimi k2", "[tools]") {
    Run f1 = parse(Format::FunctionaryV31, "Checking.<function=get_weather>{\"city\": \"Paris\"}</function><function=g>{}</function>");
    CHECK(f1.msg.content == "Checking.");
    check_call(f1.msg, 0, "get_weather", kParis);
    check_call(f1.msg, 1, "g", ordered_json::object());
    Run fp = parse(Format::FunctionaryV31, "<|python_tag|>print(1)");
    check_call(fp.msg, 0, "python", {{"code", "print(1)"}});
    Run f2 = parse(Format::FunctionaryV32, "all\nLet me check.>>>get_weather\n{\"city\": \"Paris\"}>>>get_time\n{}");
    CHECK_FALSE(f2.error);
    CHECK(f2.msg.content == "Let me check.");
    check_call(f2.msg, 0, "get_weather", kParis);
    check_call(f2.msg, 1, "get_time", ordered_json::object());
    Run f2c = parse(Format::FunctionaryV32, "all\nHello >>> world");
    CHECK(f2c.msg.content == "Hello >>> world");  // " world" is no recipient: the ">>>" was text
    Run k = parse(Format::KimiK2,
                  "Let me see.<|tool_calls_section_begin|><|tool_call_begin|>functions.get_weather:0<|tool_call_argument_begin|>{\"city\": \"Paris\"}<|tool_call_end|>"
                  "<|tool_call_begin|>functions.get_time:1<|tool_call_argument_begin|>{}<|tool_call_end|><|tool_calls_section_end|>");
    CHECK_FALSE(k.error);
    CHECK(k.msg.content == "Let me see.");
    check_call(k.msg, 0, "get_weather", kParis);
    CHECK(k.msg.tool_calls[0].id == "functions.get_weather:0");
    check_call(k.msg, 1, "get_time", ordered_json::object());
}

TEST_CASE("no tools: everything is content", "[tools]") {
    Run r = parse(Format::None, "<tool_call>{\"name\": \"f\"}</tool_call>");
    CHECK(r.msg.content == "<tool_call>{\"name\": \"f\"}</tool_call>");
}

// ---- format detection over the real templates ----

TEST_CASE("detection: every corpus template gets its family's format", "[tools]") {
    // Templates marked "not read" render tools in a syntax this module does not parse yet
    // (MiniMax <invoke>, DeepSeek V3.2/V4 DSML, LFM2 Python lists, Apertus, GigaChat, Hy3,
    // Solar Open, MiniCPM 5, Command-R+ "Action:"): they get Generic, the JSON instruction.
    static const std::vector<std::pair<std::string, Format>> table = {
        {"Apertus-8B-Instruct", Format::Generic},  // not read
        {"Apriel-1.6-15b-Thinker-fixed", Format::Apriel},
        {"Bielik-11B-v3.0-Instruct", Format::Hermes},
        {"ByteDance-Seed-OSS", Format::SeedOss},
        {"Cohere2MoE", Format::CommandR7B},
        {"CohereForAI-c4ai-command-r-plus-tool_use", Format::Generic},  // not read
        {"CohereForAI-c4ai-command-r7b-12-2024-tool_use", Format::CommandR7B},
        {"GLM-4.6", Format::Glm45},
        {"GLM-4.7-Flash", Format::Glm45},
        {"GigaChat3-10B-A1.8B", Format::Generic},    // not read
        {"GigaChat3.1-10B-A1.8B", Format::Generic},  // not read
        {"HuggingFaceTB-SmolLM3-3B", Format::Generic},  // renders no tools; by arch "smollm3": Hermes
        {"Kimi-K2-Instruct", Format::KimiK2},
        {"Kimi-K2-Thinking", Format::KimiK2},
        {"LFM2-8B-A1B", Format::Generic},     // not read
        {"LFM2.5-8B-A1B", Format::Generic},   // not read
        {"LFM2.5-Instruct", Format::Generic}, // not read
        {"MiMo-VL", Format::Hermes},
        {"MiniMax-M2", Format::Generic},  // not read
        {"MiniMax-M3", Format::Generic},  // not read
        {"Mistral-Small-3.2-24B-Instruct-2506", Format::Mistral},
        {"NVIDIA-Nemotron-3-Nano-30B-A3B-BF16", Format::Qwen3Coder},
        {"NVIDIA-Nemotron-Nano-v2", Format::NemotronV2},
        {"NousResearch-Hermes-2-Pro-Llama-3-8B-tool_use", Format::Hermes},
        {"NousResearch-Hermes-3-Llama-3.1-8B-tool_use", Format::Hermes},
        {"Qwen-QwQ-32B", Format::Hermes},
        {"Qwen-Qwen2.5-7B-Instruct", Format::Hermes},
        {"Qwen-Qwen3-0.6B", Format::Hermes},
        {"Qwen3-Coder", Format::Qwen3Coder},
        {"Qwen3.5-4B", Format::Qwen3Coder},
        {"Reka-Edge", Format::Hermes},
        {"StepFun3.5-Flash", Format::Qwen3Coder},
        {"deepseek-ai-DeepSeek-R1-Distill-Llama-8B", Format::DeepSeekR1},
        {"deepseek-ai-DeepSeek-R1-Distill-Qwen-32B", Format::DeepSeekR1},
        {"deepseek-ai-DeepSeek-V3.1", Format::DeepSeekV31},
        {"deepseek-ai-DeepSeek-V3.2", Format::Generic},         // not read
        {"deepseek-ai-DeepSeek-V4-Flash-0731", Format::Generic},  // not read
        {"deepseek-ai-DeepSeek-V4", Format::Generic},           // not read
        {"fireworks-ai-llama-3-firefunction-v2", Format::FireFunction},
        {"google-gemma-2-2b-it", Format::Generic},
        {"google-gemma-4-31B-it-interleaved", Format::Gemma4},
        {"google-gemma-4-31B-it", Format::Gemma4},
        {"ibm-granite-granite-3.3-2B-Instruct", Format::Granite},
        {"ibm-granite-granite-4.0", Format::Hermes},
        {"ibm-granite-granite-4.1", Format::Hermes},
        {"llama-cpp-deepseek-r1", Format::DeepSeekR1},
        {"llama-cpp-rwkv-world", Format::Generic},
        {"meetkai-functionary-medium-v3.1", Format::FunctionaryV31},
        {"meetkai-functionary-medium-v3.2", Format::FunctionaryV32},
        {"meta-llama-Llama-3.1-8B-Instruct", Format::Llama3},
        {"meta-llama-Llama-3.2-3B-Instruct", Format::Llama3},
        {"meta-llama-Llama-3.3-70B-Instruct", Format::Llama3},
        {"microsoft-Phi-3.5-mini-instruct", Format::Generic},
        {"mistralai-Ministral-3-14B-Reasoning-2512", Format::Mistral},
        {"mistralai-Mistral-Nemo-Instruct-2407", Format::MistralNemo},
        {"moonshotai-Kimi-K2", Format::KimiK2},
        {"openai-gpt-oss-120b", Format::Harmony},
        {"openbmb-MiniCPM5-1B", Format::Generic},  // not read
        {"poolside-Laguna-S-2.1", Format::Glm45},
        {"poolside-Laguna-XS-2.1", Format::Glm45},
        {"poolside-Laguna-XS.2", Format::Glm45},
        {"tencent-Hy3", Format::Generic},  // not read
        {"unsloth-Apriel-1.5", Format::Apriel},
        {"unsloth-mistral-Devstral-Small-2507", Format::Mistral},
        {"upstage-Solar-Open-100B", Format::Generic},  // not read
    };
    std::filesystem::path dir = templates_dir();
    if (!std::filesystem::is_directory(dir)) {
        WARN("chat templates not found at " << dir.string() << " (set LOCKSTEP_CHAT_TEMPLATES): detection over the corpus skipped");
        return;
    }
    size_t files = 0;
    for (const auto& e : std::filesystem::directory_iterator(dir))
        if (e.path().extension() == ".jinja") ++files;
    CHECK(files == table.size());  // a template added to the corpus needs a row here
    for (const auto& [name, want] : table) {
        std::filesystem::path p = dir / (name + ".jinja");
        INFO(name);
        REQUIRE(std::filesystem::exists(p));
        CHECK(format_name(detect_format(read_text(p))) == format_name(want));
    }
    // An architecture decides where the template renders no tools, or there is none.
    CHECK(detect_format(read_text(dir / "HuggingFaceTB-SmolLM3-3B.jinja"), "smollm3") == Format::Hermes);
    CHECK(detect_format(read_text(dir / "google-gemma-2-2b-it.jinja"), "gemma2") == Format::Generic);
    CHECK(detect_format(read_text(dir / "Qwen-Qwen3-0.6B.jinja"), "llama") == Format::Hermes);  // the template wins
    CHECK(detect_format("", "gpt-oss") == Format::Harmony);
    CHECK(detect_format("", "gemma3") == Format::Generic);
}

TEST_CASE("format names round-trip, ids, tools from JSON", "[tools]") {
    for (int i = 0; i <= int(Format::KimiK2); ++i) CHECK(format_from_name(format_name(Format(i))) == Format(i));
    CHECK(format_id_length(Format::MistralNemo) == 9);
    CHECK(format_gives_ids(Format::KimiK2));
    CHECK(format_markers(Format::Mistral).size() == 3);
    CHECK(format_markers(Format::Generic).empty());
    auto tools = tools_from_json(ordered_json::parse(
        R"([{"type":"function","function":{"name":"get_weather","description":"Weather","parameters":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}}}])"));
    REQUIRE(tools.size() == 1);
    CHECK(tools[0].name == "get_weather");
    CHECK(tools[0].parameters["required"][0] == "city");
    CHECK_THROWS_AS(tools_from_json(ordered_json::parse(R"([{"type":"function"}])")), std::invalid_argument);
    std::string prompt = generic_tool_prompt(tools, true);
    CHECK(prompt.find("get_weather") != std::string::npos);
    CHECK(prompt.find("\"tool_calls\"") != std::string::npos);
}

// ---- forced-call grammars ----

namespace {

// A small GBNF reader and backtracking matcher (bytes; enough for these grammars: literals,
// classes, groups, alternatives, * + ? {n} {n,m}), to check that a grammar accepts the
// format's calls and that the parser reads what it accepts.
struct Gbnf {
    struct Node {
        enum K { Seq, Alt, Lit, Cls, Ref, Rep } k = Seq;
        std::vector<Node> kids;
        std::string text;                          // Lit: bytes; Ref: name
        std::vector<std::pair<int, int>> ranges;   // Cls
        bool neg = false;
        int min = 0, max = -1;                     // Rep
    };
    std::map<std::string, Node> rules;
    std::string src;
    size_t i = 0;

    explicit Gbnf(std::string s) : src(std::move(s)) {
        for (;;) {
            ws(true);
            if (i >= src.size()) break;
            std::string name = ident();
            ws(false);
            if (src.compare(i, 3, "::=") != 0) throw std::runtime_error("expected ::= after " + name);
            i += 3;
            if (rules.count(name)) throw std::runtime_error("rule defined twice: " + name);
            rules[name] = alt();
        }
    }
    void ws(bool newlines) {
        while (i < src.size()) {
            if (src[i] == '#') {
                while (i < src.size() && src[i] != '\n') ++i;
            } else if (src[i] == ' ' || src[i] == '\t' || (newlines && (src[i] == '\n' || src[i] == '\r'))) {
                ++i;
            } else {
                break;
            }
        }
    }
    static bool name_char(char c) { return isalnum((unsigned char)c) || c == '-' || c == '_'; }
    std::string ident() {
        size_t b = i;
        while (i < src.size() && name_char(src[i])) ++i;
        if (b == i) throw std::runtime_error("expected a name at " + std::to_string(i));
        return src.substr(b, i - b);
    }
    // Is a new rule starting here (name ::=)?
    bool rule_head() {
        size_t j = i;
        while (j < src.size() && name_char(src[j])) ++j;
        while (j < src.size() && (src[j] == ' ' || src[j] == '\t')) ++j;
        return j > i && src.compare(j, 3, "::=") == 0;
    }
    int esc_char() {
        char c = src[i++];
        if (c != '\\') return (unsigned char)c;
        c = src[i++];
        return c == 'n' ? '\n' : c == 't' ? '\t' : c == 'r' ? '\r' : (unsigned char)c;
    }
    Node alt() {
        Node a;
        a.k = Node::Alt;
        a.kids.push_back(seq());
        while (i < src.size() && src[i] == '|') {
            ++i;
            a.kids.push_back(seq());
        }
        return a;
    }
    Node seq() {
        Node s;
        for (;;) {
            ws(true);
            if (i >= src.size() || src[i] == '|' || src[i] == ')' || rule_head()) return s;
            Node n;
            if (src[i] == '"') {
                n.k = Node::Lit;
                ++i;
                while (src[i] != '"') n.text += char(esc_char());
                ++i;
            } else if (src[i] == '[') {
                n.k = Node::Cls;
                ++i;
                if (src[i] == '^') n.neg = true, ++i;
                while (src[i] != ']') {
                    int lo = esc_char(), hi = lo;
                    if (src[i] == '-' && src[i + 1] != ']') ++i, hi = esc_char();
                    n.ranges.push_back({lo, hi});
                }
                ++i;
            } else if (src[i] == '(') {
                ++i;
                n = alt();
                ws(true);
                if (src[i++] != ')') throw std::runtime_error("expected )");
            } else {
                n.k = Node::Ref;
                n.text = ident();
            }
            // postfix
            while (i < src.size() && (src[i] == '*' || src[i] == '+' || src[i] == '?' || src[i] == '{')) {
                Node r;
                r.k = Node::Rep;
                char c = src[i++];
                if (c == '*') r.min = 0, r.max = -1;
                if (c == '+') r.min = 1, r.max = -1;
                if (c == '?') r.min = 0, r.max = 1;
                if (c == '{') {
                    size_t e = src.find('}', i);
                    std::string in = src.substr(i, e - i);
                    size_t comma = in.find(',');
                    r.min = std::stoi(in.substr(0, comma));
                    r.max = comma == std::string::npos ? r.min : (comma + 1 == in.size() ? -1 : std::stoi(in.substr(comma + 1)));
                    i = e + 1;
                }
                r.kids.push_back(std::move(n));
                n = std::move(r);
            }
            s.kids.push_back(std::move(n));
        }
    }

    std::string_view text;
    using K = std::function<bool(size_t)>;
    bool m(const Node& n, size_t p, const K& k) {
        switch (n.k) {
        case Node::Lit: return text.compare(p, n.text.size(), n.text) == 0 && k(p + n.text.size());
        case Node::Cls: {
            if (p >= text.size()) return false;
            int c = (unsigned char)text[p];
            bool in = false;
            for (auto [lo, hi] : n.ranges) in |= c >= lo && c <= hi;
            return in != n.neg && k(p + 1);
        }
        case Node::Ref: {
            auto it = rules.find(n.text);
            if (it == rules.end()) throw std::runtime_error("undefined rule " + n.text);
            return m(it->second, p, k);
        }
        case Node::Alt:
            for (const Node& a : n.kids)
                if (m(a, p, k)) return true;
            return false;
        case Node::Seq: return seq_m(n, 0, p, k);
        case Node::Rep: return rep_m(n, 0, p, k);
        }
        return false;
    }
    bool seq_m(const Node& n, size_t j, size_t p, const K& k) {
        if (j == n.kids.size()) return k(p);
        return m(n.kids[j], p, [&](size_t q) { return seq_m(n, j + 1, q, k); });
    }
    bool rep_m(const Node& n, int count, size_t p, const K& k) {
        if (n.max < 0 || count < n.max)
            if (m(n.kids[0], p, [&](size_t q) { return q != p && rep_m(n, count + 1, q, k); })) return true;
        return count >= n.min && k(p);
    }
    bool accepts(std::string_view s) {
        text = s;
        return m(rules.at("root"), 0, [&](size_t q) { return q == s.size(); });
    }
};

// The trivial schema converter: any JSON object (an integer where the schema says so, for
// the XML formats' values), its helpers defined again for every tool with the same text.
std::string any_object_rules(const ordered_json& schema, const std::string& name) {
    bool integer = schema.is_object() && schema.contains("type") && schema["type"] == "integer";
    return name + (integer ? " ::= [0-9]+\n" : " ::= t-obj\n") +
                  "t-obj ::= \"{\" t-ws (t-kv (\",\" t-ws t-kv)*)? \"}\"\n"
                  "t-kv ::= t-str t-ws \":\" t-ws t-val t-ws\n"
                  "t-val ::= t-str | t-obj | [-0-9]+ | \"true\" | \"false\" | \"null\" | \"[\" t-ws (t-val (\",\" t-ws t-val)*)? \"]\"\n"
                  "t-str ::= \"\\\"\" ([^\"\\\\] | \"\\\\\" [\"\\\\nt])* \"\\\"\"\n"
                  "t-ws ::= [ \\t\\n]*\n";
}

}  // namespace

TEST_CASE("forced-call grammars accept the format's calls, and the parser reads them", "[tools]") {
    std::vector<ToolSpec> tools = {
        {"get_weather", "", ordered_json::parse(R"({"type":"object","properties":{"city":{"type":"string"},"days":{"type":"integer"}},"required":["city"]})")},
        {"get_time", "", ordered_json::parse(R"({"type":"object","properties":{}})")},
    };
    struct Case {
        Format f;
        std::string one, two;  // a call of get_weather; two calls (parallel)
    };
    const std::string A = "{\"city\": \"Paris\"}";
    const std::vector<Case> cases = {
        {Format::Hermes, "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": " + A + "}\n</tool_call>",
         "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": " + A + "}\n</tool_call>\n<tool_call>\n{\"name\": \"get_time\", \"arguments\": {}}\n</tool_call>"},
        {Format::Qwen3Coder, "<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n</function>\n</tool_call>",
         "<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n<parameter=days>\n3\n</parameter>\n</function>\n</tool_call>\n"
         "<tool_call>\n<function=get_time>\n</function>\n</tool_call>"},
        {Format::SeedOss, "<seed:tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n</function>\n</seed:tool_call>", ""},
        {Format::Glm45, "<tool_call>get_weather\n<arg_key>city</arg_key>\n<arg_value>Paris</arg_value>\n</tool_call>",
         "<tool_call>get_weather\n<arg_key>city</arg_key>\n<arg_value>Paris</arg_value>\n</tool_call>\n<tool_call>get_time\n</tool_call>"},
        {Format::Llama3, "{\"name\": \"get_weather\", \"parameters\": " + A + "}",
         "{\"name\": \"get_weather\", \"parameters\": " + A + "}; {\"name\": \"get_time\", \"parameters\": {}}"},
        {Format::MistralNemo, "[TOOL_CALLS][{\"name\": \"get_weather\", \"arguments\": " + A + ", \"id\": \"abcDEF123\"}]",
         "[TOOL_CALLS][{\"name\": \"get_weather\", \"arguments\": " + A + ", \"id\": \"abcDEF123\"}, {\"name\": \"get_time\", \"arguments\": {}, \"id\": \"abcDEF124\"}]"},
        {Format::Mistral, "[TOOL_CALLS]get_weather[ARGS]" + A, "[TOOL_CALLS]get_weather[ARGS]" + A + "[TOOL_CALLS]get_time[ARGS]{}"},
        {Format::Harmony, "<|channel|>analysis<|message|>Use the tool.<|end|><|start|>assistant<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>" + A + "<|call|>", ""},
        {Format::Gemma4, "<|tool_call>call:get_weather{city:<|\"|>Paris<|\"|>}<tool_call|>",
         "<|tool_call>call:get_weather{city:<|\"|>Paris<|\"|>,days:3}<tool_call|><|tool_call>call:get_time{}<tool_call|>"},
        {Format::Generic, "{\"tool_call\": {\"name\": \"get_weather\", \"arguments\": " + A + "}}",
         "{\"tool_calls\": [{\"name\": \"get_weather\", \"arguments\": " + A + "}, {\"name\": \"get_time\", \"arguments\": {}}]}"},
        {Format::DeepSeekR1, "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>get_weather\n```json\n" + A + "\n```<｜tool▁call▁end｜><｜tool▁calls▁end｜>", ""},
        {Format::DeepSeekV31, "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>get_weather<｜tool▁sep｜>" + A + "<｜tool▁call▁end｜><｜tool▁calls▁end｜>",
         "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>get_weather<｜tool▁sep｜>" + A + "<｜tool▁call▁end｜>\n<｜tool▁call▁begin｜>get_time<｜tool▁sep｜>{}<｜tool▁call▁end｜><｜tool▁calls▁end｜>"},
        {Format::Granite, "<|tool_call|>[{\"name\": \"get_weather\", \"arguments\": " + A + "}]",
         "<|tool_call|>[{\"name\": \"get_weather\", \"arguments\": " + A + "}, {\"name\": \"get_time\", \"arguments\": {}}]"},
        {Format::NemotronV2, "<TOOLCALL>[{\"name\": \"get_weather\", \"arguments\": " + A + "}]</TOOLCALL>", ""},
        {Format::Apriel, "<tool_calls>[{\"name\": \"get_weather\", \"arguments\": " + A + "}]</tool_calls>", ""},
        {Format::FireFunction, " functools[{\"name\": \"get_weather\", \"arguments\": " + A + "}]", ""},
        {Format::CommandR7B, "<|START_THINKING|>Look it up.<|END_THINKING|><|START_ACTION|>[\n    {\"tool_call_id\": \"0\", \"tool_name\": \"get_weather\", \"parameters\": " + A + "}\n]<|END_ACTION|>", ""},
        {Format::FunctionaryV31, "<function=get_weather>" + A + "</function>", ""},
        {Format::FunctionaryV32, "get_weather\n" + A, "get_weather\n" + A + ">>>get_time\n{}"},
        {Format::KimiK2, "<|tool_calls_section_begin|><|tool_call_begin|>functions.get_weather:0<|tool_call_argument_begin|>" + A + "<|tool_call_end|><|tool_calls_section_end|>",
         "<|tool_calls_section_begin|><|tool_call_begin|>functions.get_weather:0<|tool_call_argument_begin|>" + A +
             "<|tool_call_end|><|tool_call_begin|>functions.get_time:1<|tool_call_argument_begin|>{}<|tool_call_end|><|tool_calls_section_end|>"},
    };
    for (const Case& c : cases) {
        INFO("format " << format_name(c.f));
        std::string single = tool_call_gbnf(c.f, tools, false, any_object_rules);
        std::string multi = tool_call_gbnf(c.f, tools, true, any_object_rules);
        INFO(single);
        Gbnf g1(single), gp(multi);
        CHECK(g1.accepts(c.one));
        CHECK_FALSE(g1.accepts(c.one + "x"));
        CHECK_FALSE(g1.accepts("Sure! " + c.one));
        Run r = parse(c.f, c.one, options(tools));
        CHECK_FALSE(r.error);
        check_call(r.msg, 0, "get_weather", kParis);
        if (!c.two.empty()) {
            CHECK(gp.accepts(c.two));
            CHECK_FALSE(g1.accepts(c.two));
            Run r2 = parse(c.f, c.two, options(tools));
            CHECK_FALSE(r2.error);
            CHECK(r2.msg.tool_calls.size() == 2);
        }
        // a named tool_choice: only that function
        Gbnf named(tool_call_gbnf(c.f, {tools[1]}, false, any_object_rules));
        CHECK_FALSE(named.accepts(c.one));
        // the lazy trigger is where the grammar's text begins
        CallTrigger t = call_trigger(c.f);
        bool starts_with_word = false;
        for (const std::string& w : t.words) starts_with_word |= c.one.rfind(w, 0) == 0 || c.one.find(w) != std::string::npos;
        CHECK((starts_with_word || t.at_start));
    }
    CHECK_THROWS_AS(tool_call_gbnf(Format::None, tools, false, any_object_rules), std::invalid_argument);
    CHECK_THROWS_AS(tool_call_gbnf(Format::Hermes, {}, false, any_object_rules), std::invalid_argument);
}

// ---- every JSON-argument format, one table ----

namespace {

// One call of `name` with `args` (JSON text) as format f writes it; "" for formats whose
// arguments are not JSON text (XML, Gemma 4: tested above).
std::string wrap(Format f, const std::string& name, const std::string& a) {
    switch (f) {
    case Format::Hermes: return "<tool_call>\n{\"name\": \"" + name + "\", \"arguments\": " + a + "}\n</tool_call>";
    case Format::Llama3: return "{\"name\": \"" + name + "\", \"parameters\": " + a + "}";
    case Format::MistralNemo: return "[TOOL_CALLS][{\"name\": \"" + name + "\", \"arguments\": " + a + ", \"id\": \"abcDEF123\"}]";
    case Format::Mistral: return "[TOOL_CALLS]" + name + "[ARGS]" + a;
    case Format::Harmony: return "<|channel|>commentary to=functions." + name + " <|constrain|>json<|message|>" + a + "<|call|>";
    case Format::Generic: return "{\"tool_call\": {\"name\": \"" + name + "\", \"arguments\": " + a + "}}";
    case Format::DeepSeekR1: return "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>" + name + "\n```json\n" + a + "\n```<｜tool▁call▁end｜><｜tool▁calls▁end｜>";
    case Format::DeepSeekV31: return "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>" + name + "<｜tool▁sep｜>" + a + "<｜tool▁call▁end｜><｜tool▁calls▁end｜>";
    case Format::Granite: return "<|tool_call|>[{\"name\": \"" + name + "\", \"arguments\": " + a + "}]";
    case Format::NemotronV2: return "<TOOLCALL>[{\"name\": \"" + name + "\", \"arguments\": " + a + "}]</TOOLCALL>";
    case Format::Apriel: return "<tool_calls>[{\"name\": \"" + name + "\", \"arguments\": " + a + "}]</tool_calls>";
    case Format::FireFunction: return "functools[{\"name\": \"" + name + "\", \"arguments\": " + a + "}]";
    case Format::CommandR7B: return "<|START_ACTION|>[{\"tool_call_id\": \"0\", \"tool_name\": \"" + name + "\", \"parameters\": " + a + "}]<|END_ACTION|>";
    case Format::FunctionaryV31: return "<function=" + name + ">" + a + "</function>";
    case Format::FunctionaryV32: return name + "\n" + a;
    case Format::KimiK2:
        return "<|tool_calls_section_begin|><|tool_call_begin|>functions." + name + ":0<|tool_call_argument_begin|>" + a + "<|tool_call_end|><|tool_calls_section_end|>";
    default: return "";
    }
}

}  // namespace

TEST_CASE("every JSON format: escapes and non-ASCII, malformed arguments, near-markers", "[tools]") {
    std::vector<ToolSpec> tools = {{"search", "", {}}};
    const std::string tricky = R"({"q": "naïve \"quoted\" back\\slash \u00e9 日本語 🙂 </tool_call> [ARGS] }{", "n": -1.5e3, "list": [true, null, {"x": []}]})";
    for (int fi = 0; fi <= int(Format::KimiK2); ++fi) {
        Format f = Format(fi);
        std::string call = wrap(f, "search", tricky);
        if (call.empty()) continue;
        INFO("format " << format_name(f));
        Run r = parse(f, call, options(tools));
        CHECK_FALSE(r.error);
        check_call(r.msg, 0, "search", ordered_json::parse(tricky));
        CHECK(r.msg.content.empty());

        // Arguments that are not JSON: an error once the call was announced (Generic, which
        // reads its object whole, shows such a reply as content instead).
        Run bad = parse(f, wrap(f, "search", R"({"q": tru})"), options(tools));
        if (f == Format::Generic) {
            CHECK(bad.msg.tool_calls.empty());
            CHECK_FALSE(bad.error);
        } else {
            CHECK(bad.error);
        }

        // Text holding the start of each trigger word, but no call, is content as written.
        for (const std::string& w : call_trigger(f).words) {
            for (size_t n = 1; n < w.size(); n += 3) {
                std::string text = "all\nSee " + w.substr(0, n) + " here, and " + w.substr(0, n);
                if (f == Format::FunctionaryV32) text = "all\nSee it";  // ">>>" opens a part there
                Run t = parse(f, text, options(tools));
                CHECK(t.msg.tool_calls.empty());
                CHECK_FALSE(t.error);
                CHECK(t.msg.content == (f == Format::FunctionaryV32 ? "See it" : text));
            }
        }
    }
}
