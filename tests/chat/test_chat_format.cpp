// ChatFormat::render: a template that refuses a conversation gets it again in the forms real
// templates accept (assistant calls with content "", arguments as the client's JSON string,
// no system role), fewest changes first; a template that refuses every form keeps its error.
#include <catch2/catch.hpp>

#include <string>

#include "core/chat/chat_format.h"
#include "core/gguf/gguf.h"
#include "core/runtime/grammar_vocab.h"
#include "tests/support/test_util.h"
#include "tests/support/tiny_gguf.h"

using namespace ls::chat;
using nlohmann::ordered_json;

namespace {

// The tiny model's file and vocabulary with `source` as the chat template ({# <tool_call> #}
// in it: the Hermes format, so calls reach the template as calls).
std::string render_with(const std::string& source, const ordered_json& messages) {
    static const std::string path = [] {
        const std::string p = ls::test::temp_path("chat_format_tiny.gguf");
        ls::write_tiny_gemma3(p, ls::TinyGemma3Spec{});
        return p;
    }();
    auto f = ls::GgufFile::open(path);
    const ls::Tokenizer tok = ls::Tokenizer::from_gguf(*f);
    ChatFormat cf = ChatFormat::from_model(*f, tok, "gemma3", source);
    REQUIRE(cf.is_jinja());
    ChatInput in;
    in.messages = messages;
    in.add_generation_prompt = false;
    return cf.render(in);
}

const ordered_json kCall = ordered_json::parse(R"([
  {"role": "system", "content": "S"},
  {"role": "user", "content": "U"},
  {"role": "assistant", "content": null, "tool_calls": [{"id": "c1", "type": "function",
    "function": {"name": "f", "arguments": "{\"a\": 1}"}}]},
  {"role": "tool", "tool_call_id": "c1", "content": "R"}])");

}  // namespace

TEST_CASE("chat format: a template that concatenates content gets \"\" for a call's null content", "[chat]") {
    const std::string t = "{# <tool_call> #}{% for m in messages %}{{ m.role + ':' + m.content + ';' }}{% endfor %}";
    CHECK(render_with(t, kCall) == "system:S;user:U;assistant:;tool:R;");
}

TEST_CASE("chat format: arguments as an object for tojson, as the client's string for concatenation", "[chat]") {
    const std::string obj = "{# <tool_call> #}{% for m in messages %}{% if m.tool_calls %}{% for c in m.tool_calls %}"
                            "{{ c.function.arguments | tojson }}{% endfor %}{% endif %}{% endfor %}";
    CHECK(render_with(obj, kCall) == "{\"a\": 1}");
    const std::string cat = "{# <tool_call> #}{% for m in messages %}{% if m.tool_calls %}{% for c in m.tool_calls %}"
                            "{{ 'call:' + c.function.arguments }}{% endfor %}{% endif %}{% endfor %}";
    CHECK(render_with(cat, kCall) == "call:{\"a\": 1}");
}

TEST_CASE("chat format: a template without a system role gets it before the first user message", "[chat]") {
    const std::string t = "{# <tool_call> #}{% if messages[0].role == 'system' %}{{ raise_exception('System role not supported') }}{% endif %}"
                          "{% for m in messages %}{% if m.role == 'user' %}{{ m.role + ':' + m.content + ';' }}{% endif %}{% endfor %}";
    CHECK(render_with(t, kCall) == "user:S\n\nU;");
}

TEST_CASE("chat format: a template that refuses every form keeps its own error", "[chat]") {
    const std::string t = "{# <tool_call> #}{{ raise_exception('never') }}";
    CHECK_THROWS_WITH(render_with(t, kCall), Catch::Contains("never"));
}

TEST_CASE("tool grammar vocabulary: a format's control-token markers are their text, endings stay endings", "[chat]") {
    const std::string path = ls::test::temp_path("chat_format_vocab.gguf");
    ls::write_tiny_gemma3(path, ls::TinyGemma3Spec{});
    auto f = ls::GgufFile::open(path);
    const ls::Tokenizer tok = ls::Tokenizer::from_gguf(*f);
    const int32_t start = tok.find_token("<start_of_turn>"), end = tok.find_token("<end_of_turn>");
    REQUIRE(start >= 0);
    REQUIRE(end >= 0);
    const auto plain = ls::grammar_vocab(tok);
    CHECK(plain->is_special(start));
    const auto tools = ls::grammar_vocab(tok, {"<start_of_turn>", "<end_of_turn>"});
    CHECK_FALSE(tools->is_special(start));
    CHECK(tools->token_bytes(start) == "<start_of_turn>");
    CHECK(tools->is_eog(end));  // (allowed where the grammar may end, never as text)
}
