// Completion requests: fill-in-the-middle prompts (suffix) on a vocabulary with FIM markers,
// from the file's ids or the marker texts, refused on one without; echo's prompt text; n.
// No model: a tiny byte-level vocabulary.
#include <catch2/catch.hpp>

#include "core/text/tokenizer.h"
#include "tests/support/byte_vocab.h"
#include "tools/server/api_request.h"

using namespace ls;
using namespace ls::server;
using nlohmann::json;

namespace {

Tokenizer byte_vocab(const std::vector<std::string>& specials, bool fim_ids = false) {
    std::vector<std::pair<std::string, int32_t>> typed;
    for (const std::string& t : specials) typed.emplace_back(t, 3);
    Vocab v = test::byte_vocab(typed);
    v.bos_id = 256;
    v.add_bos = true;
    if (fim_ids) v.fim_pre_id = 257, v.fim_suf_id = 258, v.fim_mid_id = 259;
    return Tokenizer(std::move(v));
}

ApiContext context(const Tokenizer& tok) {
    ApiContext ctx;
    ctx.tok = &tok;
    ctx.arch = "qwen3";
    ctx.n_ctx = 4096;
    ctx.n_slots = 2;
    return ctx;
}

std::string param_of(const std::function<void()>& f) {
    try {
        f();
    } catch (const ApiError& e) {
        return e.param;
    }
    return "(accepted)";
}

}  // namespace

TEST_CASE("server completion: suffix builds prefix, suffix, middle with the model's FIM markers", "[server]") {
    // From the marker texts (Qwen coder's), and from the file's ids under other names.
    for (bool ids : {false, true}) {
        const Tokenizer tok = ids ? byte_vocab({"<s>", "<A>", "<B>", "<C>"}, true)
                                  : byte_vocab({"<s>", "<|fim_prefix|>", "<|fim_suffix|>", "<|fim_middle|>"});
        REQUIRE(tok.fim().ok());
        const ApiContext ctx = context(tok);
        GenRequest r = parse_completion({{"prompt", "def f("}, {"suffix", "):\n    pass"}}, ctx);
        std::vector<int32_t> want{256, 257};
        for (int32_t t : tok.encode("def f(", false, false)) want.push_back(t);
        want.push_back(258);
        for (int32_t t : tok.encode("):\n    pass", false, false)) want.push_back(t);
        want.push_back(259);
        CHECK(r.job.prompt == want);
        // An empty suffix is a plain completion.
        CHECK(parse_completion({{"prompt", "x"}, {"suffix", ""}}, ctx).job.prompt == tok.encode("x", true, true));
        CHECK(param_of([&] { parse_completion({{"prompt", {1, 2}}, {"suffix", "y"}}, ctx); }) == "prompt");
        CHECK(param_of([&] { parse_completion({{"prompt", "x"}, {"suffix", 5}}, ctx); }) == "suffix");
    }
    const Tokenizer plain = byte_vocab({"<s>"});
    CHECK_FALSE(plain.fim().ok());
    CHECK(param_of([&] { parse_completion({{"prompt", "x"}, {"suffix", "y"}}, context(plain)); }) == "suffix");
}

TEST_CASE("server completion: echo carries the prompt's text, echo with logprobs is refused by name", "[server]") {
    const Tokenizer tok = byte_vocab({"<s>"});
    const ApiContext ctx = context(tok);
    CHECK(parse_completion({{"prompt", "Hello there"}, {"echo", true}}, ctx).echo == "Hello there");
    CHECK(parse_completion({{"prompt", "Hello there"}}, ctx).echo.empty());
    const std::vector<int32_t> ids = tok.encode("from ids", false, false);
    CHECK(parse_completion({{"prompt", ids}, {"echo", true}}, ctx).echo == "from ids");
    CHECK(param_of([&] { parse_completion({{"prompt", "x"}, {"echo", true}, {"logprobs", 2}}, ctx); }) == "echo");
    CHECK(parse_completion({{"prompt", "x"}, {"n", 2}}, ctx).job.n == 2);
    CHECK(param_of([&] { parse_completion({{"prompt", "x"}, {"n", 3}}, ctx); }) == "n");
}
