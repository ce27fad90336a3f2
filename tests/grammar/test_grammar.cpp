// Grammar-constrained decoding: the GBNF parser, the matcher (incl. rollback), the token mask
// against a brute-force check, and JSON Schema conversion (documents drawn from the grammar
// must parse and hold the schema's shape; check_schema_samples.py validates them fully with
// Python's jsonschema).
#include <catch2/catch.hpp>

#include <functional>
#include <random>

#include "core/grammar/json_schema.h"
#include "core/grammar/token_mask.h"
#include "tests/grammar/random_walk.h"

using namespace ls::grammar;
using nlohmann::ordered_json;

namespace {

bool full_match(const std::shared_ptr<const Grammar>& g, std::string_view s) {
    Matcher m(g);
    return m.accept_bytes(s) && m.is_accepting();
}

std::string error_of(const std::function<void()>& f) {
    try {
        f();
    } catch (const Error& e) {
        return e.what();
    }
    return "(no error)";
}

std::string parse_error(const std::string& gbnf) {
    return error_of([&] { Grammar::parse(gbnf); });
}

// A JSON grammar in GBNF, written the way llama.cpp's grammars/json.gbnf is.
const char* kJson = R"G(
root   ::= object
value  ::= object | array | string | number | ("true" | "false" | "null") ws
object ::=
  "{" ws (
            string ":" ws value
    ("," ws string ":" ws value)*
  )? "}" ws
array  ::=
  "[" ws (
            value
    ("," ws value)*
  )? "]" ws
string ::=
  "\"" (
    [^"\\\x7F\x00-\x1F] |
    "\\" (["\\bfnrt] | "u" [0-9a-fA-F]{4}) # escapes
  )* "\"" ws
number ::= ("-"? ([0-9] | [1-9] [0-9]{0,15})) ("." [0-9]+)? ([eE] [-+]? [0-9] [1-9]{0,15})? ws
# Optional space: by convention, applied in this grammar after literal chars when allowed
ws ::= | " " | "\n" [ \t]{0,20}
)G";

const char* kArith = R"G(
root   ::= expr
expr   ::= term (("+" | "-") term)*
term   ::= factor (("*" | "/") factor)*
factor ::= number | "(" expr ")" | "-" factor
number ::= [0-9]+ ("." [0-9]+)?
)G";

}  // namespace

TEST_CASE("GBNF: the syntax llama.cpp reads", "[grammar]") {
    auto g = Grammar::parse(R"G(
# comments anywhere
root ::= greeting-word " " name "\x21" tail? # trailing comment
greeting-word ::= "hello" | "hi"
name ::= [A-Z] [a-z_0-9]*
tail ::= "\t\u00e9\U0001F600" [^\n] .
)G");
    CHECK(full_match(g, "hello Ada!"));
    CHECK(full_match(g, "hi Bo_9!"));
    CHECK(full_match(g, "hi Bo!\t\xC3\xA9\xF0\x9F\x98\x80xy"));
    CHECK_FALSE(full_match(g, "hi Bo!\t\xC3\xA9\xF0\x9F\x98\x80\ny"));
    CHECK_FALSE(full_match(g, "hey Ada!"));
    CHECK_FALSE(full_match(g, "hello ada!"));

    // Alternatives continue after '|' on the next line, and inside parentheses over newlines.
    auto g2 = Grammar::parse("root ::= \"a\" |\n  \"b\" | \"c\"\nother ::= (\n \"x\"\n \"y\" )\n");
    CHECK(full_match(g2, "a"));
    CHECK(full_match(g2, "c"));
    // Empty alternatives and an empty string literal.
    auto g3 = Grammar::parse("root ::= \"\" | \"q\" opt\nopt ::= | \"!\"\n");
    CHECK(full_match(g3, ""));
    CHECK(full_match(g3, "q"));
    CHECK(full_match(g3, "q!"));
    // A start rule other than root.
    auto g4 = Grammar::parse("start ::= [0-9]\n", "start");
    CHECK(full_match(g4, "7"));
}

TEST_CASE("GBNF: errors name the line, the column and the problem", "[grammar]") {
    CHECK_THAT(parse_error("root ::= \"a\"\n  x ::= \"b\" undefined-rule\n"),
               Catch::Contains("line 2, column 13") && Catch::Contains("undefined rule 'undefined-rule'"));
    CHECK_THAT(parse_error("root ::= expr\nexpr ::= expr \"+\" \"1\" | \"1\"\n"), Catch::Contains("rule 'expr' is left-recursive"));
    // Through another rule, and through a nullable prefix.
    CHECK_THAT(parse_error("root ::= a\na ::= b \"x\"\nb ::= a | \"y\"\n"), Catch::Contains("left-recursive"));
    CHECK_THAT(parse_error("root ::= \"x\"? root \"y\" | \"z\"\n"), Catch::Contains("rule 'root' is left-recursive"));
    CHECK_THAT(parse_error(""), Catch::Contains("empty grammar"));
    CHECK_THAT(parse_error("  # only a comment\n\n"), Catch::Contains("empty grammar"));
    CHECK_THAT(parse_error("start ::= \"a\"\n"), Catch::Contains("no rule named 'root'"));
    CHECK_THAT(parse_error("root ::= \"a\"\nroot ::= \"b\"\n"), Catch::Contains("line 2, column 1") && Catch::Contains("defined twice"));
    CHECK_THAT(parse_error("root ::= \"abc\n"), Catch::Contains("line 1, column 10") && Catch::Contains("unterminated string"));
    CHECK_THAT(parse_error("root ::= [a-z\n"), Catch::Contains("unterminated character class"));
    CHECK_THAT(parse_error("root ::= \"\\q\"\n"), Catch::Contains("unknown escape \\q"));
    CHECK_THAT(parse_error("root ::= \"\\xZZ\"\n"), Catch::Contains("hex digits"));
    CHECK_THAT(parse_error("root ::= [z-a]\n"), Catch::Contains("out of order"));
    CHECK_THAT(parse_error("root ::= \"a\"{3,2}\n"), Catch::Contains("n < m"));
    CHECK_THAT(parse_error("root ::= * \"a\"\n"), Catch::Contains("nothing before it to repeat"));
    CHECK_THAT(parse_error("root ::= (\"a\" \"b\"\n"), Catch::Contains("expected ')'"));
    CHECK_THAT(parse_error("root \"a\"\n"), Catch::Contains("expected '::='"));
    CHECK_THAT(parse_error("root ::= \"a\" ) \n"), Catch::Contains("unexpected ')'"));
    CHECK_THAT(parse_error("root ::= <[1000]>\n"), Catch::Contains("token references"));
    CHECK_THAT(parse_error("root ::= \"a\" b ::= \"c\"\n"), Catch::Contains("expected a newline before the rule 'b'"));
}

TEST_CASE("GBNF: limits against hostile grammars", "[grammar]") {
    CHECK_THAT(parse_error("root ::= \"a\"{10001}\n"), Catch::Contains("repetition count above 10000"));
    // Nested repetitions add up instead of multiplying (each level repeats one rule reference)...
    CHECK_NOTHROW(Grammar::parse("root ::= ((\"a\"{0,9999}){0,9999}){0,9999}\n"));
    // ... and many of them are refused at a limit, not expanded without bound.
    std::string wide = "root ::=";
    for (int i = 0; i < 40; ++i) wide += " \"a\"{0,9999}";
    CHECK_THAT(parse_error(wide + "\n"), Catch::Contains("more than"));
    std::string deep = "root ::= " + std::string(200, '(') + "\"a\"" + std::string(200, ')') + "\n";
    CHECK_THAT(parse_error(deep), Catch::Contains("nested deeper than 128"));
    GrammarLimits small;
    small.max_rules = 10;
    std::string many = "root ::= r0\n";
    for (int i = 0; i < 20; ++i) many += "r" + std::to_string(i) + " ::= \"x\"\n";
    CHECK_THAT(error_of([&] { Grammar::parse(many, "root", small); }), Catch::Contains("more than 10 rules"));
    // A long chain of rules neither overflows the parser's checks nor the matcher.
    std::string chain = "root ::= r0\n";
    for (int i = 0; i < 5000; ++i) chain += "r" + std::to_string(i) + " ::= r" + std::to_string(i + 1) + "\n";
    chain += "r5000 ::= \"end\"\n";
    CHECK(full_match(Grammar::parse(chain), "end"));
}

TEST_CASE("matcher: arithmetic expressions", "[grammar]") {
    auto g = Grammar::parse(kArith);
    for (const char* ok : {"1", "1+2", "(1+2)*3", "-(4.5/2)-1", "((((7))))", "2*-3"}) CHECK(full_match(g, ok));
    for (const char* bad : {"", "1+", "(1", "1)", "1..2", "+1", "1 + 2"}) CHECK_FALSE(full_match(g, bad));
    Matcher m(g);
    REQUIRE(m.accept_bytes("(1+"));
    CHECK_FALSE(m.is_accepting());
    CHECK(m.can_continue());
    CHECK_FALSE(m.accept_bytes(")"));  // refused, and the state is unchanged
    CHECK(m.accept_bytes("2)"));
    CHECK(m.is_accepting());
}

TEST_CASE("matcher: JSON grammar", "[grammar]") {
    auto g = Grammar::parse(kJson);
    CHECK(full_match(g, R"({"a": [1, 2.5e3, -0, true, null, {"b": "x\"\u00e9\n"}], "c": {}})"));
    CHECK(full_match(g, "{\n  \"k\": \"\xE2\x82\xAC\"\n}"));
    CHECK_FALSE(full_match(g, R"({"a": [1, 2,]})"));
    CHECK_FALSE(full_match(g, R"({"a" 1})"));
    CHECK_FALSE(full_match(g, "{\"a\": \"tab\there\"}"));  // a raw control character in a string
    CHECK_FALSE(full_match(g, R"({"a": 01})"));
}

TEST_CASE("matcher: UTF-8 classes and sequences split across calls", "[grammar]") {
    auto g = Grammar::parse("root ::= [α-ω]+ \"€\" [^a]\n");
    CHECK(full_match(g, "αβω€b"));
    CHECK(full_match(g, "λ€\xF0\x9F\x98\x80"));
    CHECK_FALSE(full_match(g, "αβω€a"));
    CHECK_FALSE(full_match(g, "a€b"));
    Matcher m(g);
    // "λ" is CE BB: the lead byte alone is allowed (it can complete into the class) ...
    REQUIRE(m.accept_bytes("\xCE"));
    CHECK_FALSE(m.is_accepting());
    REQUIRE(m.accept_bytes("\xBB"));
    // ... while a lead byte that can only complete outside the class is refused at once.
    CHECK_FALSE(m.accept_bytes("\xD0"));     // U+0400..U+043F: Cyrillic, not Greek
    REQUIRE(m.accept_bytes("\xE2\x82"));     // the first two bytes of "€" (E2 82 AC)
    CHECK_FALSE(m.accept_bytes("\x80"));     // E2 82 80 is U+2080, not €
    REQUIRE(m.accept_bytes("\xAC"));
    CHECK_FALSE(m.accept_bytes("\xC0\x80"));  // an overlong NUL
    CHECK_FALSE(m.accept_bytes("\xED\xA0\x80"));  // a surrogate
    CHECK_FALSE(m.accept_bytes("\xFF"));
    CHECK_FALSE(m.accept_bytes("\x80"));  // a continuation byte with no lead
    REQUIRE(m.accept_bytes("\xF0\x9F\x98"));
    CHECK_FALSE(m.is_accepting());  // an unfinished character is never the end
    REQUIRE(m.accept_bytes("\x80"));
    CHECK(m.is_accepting());
    CHECK_FALSE(m.can_continue());
}

TEST_CASE("matcher: repetition bounds", "[grammar]") {
    auto g = Grammar::parse("root ::= \"a\"{2,4} \"b\"{3} \"c\"{2,} \"d\"{0,1} (\"xy\"){1,2}\n");
    CHECK(full_match(g, "aabbbccxy"));
    CHECK(full_match(g, "aaaabbbccccccdxyxy"));
    CHECK_FALSE(full_match(g, "abbbccxy"));
    CHECK_FALSE(full_match(g, "aaaaabbbccxy"));
    CHECK_FALSE(full_match(g, "aabbccxy"));
    CHECK_FALSE(full_match(g, "aabbbcxy"));
    CHECK_FALSE(full_match(g, "aabbbccddxy"));
    CHECK_FALSE(full_match(g, "aabbbccxyxyxy"));
    CHECK_FALSE(full_match(g, "aabbbccx"));
    auto z = Grammar::parse("root ::= \"a\"{0} \"b\"\n");
    CHECK(full_match(z, "b"));
    CHECK_FALSE(full_match(z, "ab"));
}

TEST_CASE("matcher: the state depends only on the bytes, rollback equals replay", "[grammar]") {
    auto g = Grammar::parse(kJson);
    Matcher walker(g);
    std::mt19937_64 rng(7);
    for (int round = 0; round < 20; ++round) {
        std::optional<std::string> doc;
        while (!doc) doc = testing::random_walk(walker, rng, 600, 0.05);
        // Split the document into random chunks ("tokens").
        std::vector<std::string> chunks;
        for (size_t i = 0; i < doc->size();) {
            size_t n = std::min(doc->size() - i, size_t(1 + rng() % 5));
            chunks.push_back(doc->substr(i, n));
            i += n;
        }
        Matcher m(g);
        for (const auto& c : chunks) REQUIRE(m.accept_bytes(c));
        REQUIRE(m.is_accepting());
        // The same bytes in one call reach the same state (same content key).
        Matcher whole(g);
        REQUIRE(whole.accept_bytes(*doc));
        CHECK(whole.automaton().key(whole.state()) == m.automaton().key(m.state()));
        // Roll back k chunks: the state equals a fresh replay of the rest, and goes on the same.
        size_t k = rng() % (chunks.size() + 1);
        m.rollback(k);
        CHECK(m.history_size() == chunks.size() - k);
        Matcher replay(g);
        for (size_t i = 0; i + k < chunks.size(); ++i) REQUIRE(replay.accept_bytes(chunks[i]));
        CHECK(m.automaton().key(m.state()) == replay.automaton().key(replay.state()));
        CHECK(m.is_accepting() == replay.is_accepting());
        for (size_t i = chunks.size() - k; i < chunks.size(); ++i) {
            REQUIRE(m.accept_bytes(chunks[i]));
            REQUIRE(replay.accept_bytes(chunks[i]));
        }
        CHECK(m.is_accepting());
        CHECK(m.automaton().key(m.state()) == replay.automaton().key(replay.state()));
    }
    Matcher m(g);
    REQUIRE(m.accept_bytes("{"));
    CHECK_THROWS_AS(m.rollback(2), Error);
    m.rollback(1);
    CHECK(m.history_size() == 0);
    REQUIRE(m.accept_bytes("{\"a\": [1]}"));
    m.reset();
    CHECK(m.history_size() == 0);
    CHECK(m.accept_bytes("{}"));
}

TEST_CASE("matcher: an ambiguous grammar is bounded with a clear error", "[grammar]") {
    MatcherLimits lim;
    lim.max_stacks = 8;
    // Every split of a run of a's into words of length 1 or 2 is a parse; the stacks alive
    // stay few (the grammar is right-recursive), but 5 x 2 parallel parses exceed 8.
    auto g = Grammar::parse("root ::= w*\nw ::= \"a\" | \"aa\"\n");
    Matcher ok(g, nullptr, lim);
    CHECK(ok.accept_bytes(std::string(1000, 'a')));
    auto wide = Grammar::parse("root ::= x \"0\" | x \"1\" | x \"2\" | x \"3\" | x \"4\"\nx ::= [a] \"1\" | [a] \"2\"\n");
    CHECK_THAT(error_of([&] { Matcher m(wide, nullptr, lim); m.accept_bytes("a"); }), Catch::Contains("too ambiguous"));
}

namespace {

// A small vocabulary with the awkward cases: multi-byte characters whole and split, a
// continuation byte alone, an empty token, a duplicate, a special token, an end token.
std::shared_ptr<TokenMask> small_vocab() {
    std::vector<std::string> toks = {"",    "{",     "}",    "\"",   "\"a",  "a\"",      "ab",  "é",        "\xC3",
                                     "\xA9", "€",    "\xE2", "\x82\xAC", "x€y", " ",     "\n",  ", ",      ":",
                                     "1",   "12",    "-",    "true", "tr",   "ue}",     "<ctrl>", "</s>", "a",
                                     "\\",  "\\n",   "\\u00", "e9",  "\"}",  "{\"",     "\xF0\x9F", "\x98\x80", "ab"};
    std::vector<bool> eog(toks.size()), special(toks.size());
    eog[25] = true;      // </s>
    special[24] = true;  // <ctrl>
    special[25] = true;
    return std::make_shared<TokenMask>(toks, eog, special, 4);
}

void check_mask(const TokenMask& v, const Matcher& m) {
    std::vector<uint32_t> bits(v.mask_words(), 0xFFFFFFFFu);
    v.fill_mask(m, bits.data());
    for (int32_t id = 0; id < v.n_vocab(); ++id) {
        bool bit = (bits[size_t(id) / 32] >> (id % 32)) & 1;
        // The brute force: a copy of the matcher's state takes the token's bytes.
        bool want;
        if (m.is_ended()) want = false;
        else if (v.is_eog(id)) want = m.is_accepting();
        else if (v.is_special(id) || v.token_bytes(id).empty()) want = false;
        else want = v.allows(m, id);  // the byte walk (the test below also replays from scratch)
        INFO("token " << id << " '" << v.token_bytes(id) << "'");
        CHECK(bit == want);
    }
}

}  // namespace

TEST_CASE("token mask: equals allows() and an independent replay on a small vocabulary", "[grammar]") {
    auto v = small_vocab();
    // JSON (its strings take the plain-token shortcut), strings whose classes leave out one
    // ASCII letter or a block of non-ASCII characters (the shortcut must not apply), and
    // strings of at most 3 characters (the shortcut counts characters).
    const char* grammars[] = {kJson, "root ::= (\"\\\"\" [^\"x]* \"\\\"\" \" \"?)+\n",
                              "root ::= \"\\\"\" [^\"\\\\\\x00-\\x1F\\u00e0-\\u00ff]* \"\\\"\"\n",
                              // a bounded length: a chain of states, each taking any plain character
                              "root ::= (\"\\\"\" [^\"\\\\\\x00-\\x1F]{0,3} \"\\\"\" \" \"?)+\n"};
    for (const char* text : grammars) {
        auto g = Grammar::parse(text);
        INFO(text);
        // Along several documents, at every step: mask == allows() == "a fresh matcher that has
        // taken the same bytes takes the token's bytes".
        std::mt19937_64 rng(3);
        Matcher walker(g);
        for (int round = 0; round < 8; ++round) {
            std::optional<std::string> doc;
            while (!doc) doc = testing::random_walk(walker, rng, 200, 0.1);
            Matcher m(g, v);
            std::string taken;
            for (size_t i = 0; i <= doc->size(); ++i) {
                std::vector<uint32_t> bits(v->mask_words());
                v->fill_mask(m, bits.data());
                for (int32_t id = 0; id < v->n_vocab(); ++id) {
                    bool bit = TokenMask::test(bits.data(), id);
                    bool want;
                    if (v->is_eog(id)) want = m.is_accepting();
                    else if (v->is_special(id) || v->token_bytes(id).empty()) want = false;
                    else {
                        Matcher fresh(g);
                        want = fresh.accept_bytes(taken) && fresh.accept_bytes(v->token_bytes(id));
                    }
                    INFO("after " << taken.size() << " bytes, token " << id);
                    REQUIRE(bit == want);
                    REQUIRE(v->allows(m, id) == want);
                }
                if (i < doc->size()) {
                    REQUIRE(m.accept_bytes(doc->substr(i, 1)));
                    taken += (*doc)[i];
                }
            }
        }
    }
    auto st = v->stats();
    CHECK(st.hits > 0);  // JSON states recur (the cache holds 4 masks)
    CHECK(st.misses > 0);
    // The shortcut applies inside a JSON string and not in the other two.
    Matcher in_string(Grammar::parse(kJson));
    REQUIRE(in_string.accept_bytes("{\"ab"));
    CHECK(in_string.automaton().plain_loop(in_string.state()));
    Matcher no_x(Grammar::parse(grammars[1]));
    REQUIRE(no_x.accept_bytes("\"ab"));
    CHECK_FALSE(no_x.automaton().plain_loop(no_x.state()));
    Matcher no_latin(Grammar::parse(grammars[2]));
    REQUIRE(no_latin.accept_bytes("\"ab"));
    CHECK_FALSE(no_latin.automaton().plain_loop(no_latin.state()));
    CHECK(no_latin.automaton().plain_next(no_latin.state()) == detail::Automaton::kMixed);
    Matcher short_string(Grammar::parse(grammars[3]));
    REQUIRE(short_string.accept_bytes("\"a"));
    auto& a = short_string.automaton();
    int32_t s1 = a.plain_next(short_string.state());
    REQUIRE(s1 >= 0);
    int32_t s2 = a.plain_next(uint32_t(s1));
    REQUIRE(s2 >= 0);
    CHECK(a.plain_next(uint32_t(s2)) == detail::Automaton::kReject);
}

TEST_CASE("token mask: end tokens only where the root may end, special and empty never", "[grammar]") {
    auto v = small_vocab();
    auto g = Grammar::parse("root ::= \"a\" \"b\"?\n");
    Matcher m(g, v);
    check_mask(*v, m);
    CHECK_FALSE(v->allows(m, 25));  // </s> before anything
    CHECK(v->allows(m, 6));         // "ab"
    CHECK(v->allows(m, 26));        // "a"
    CHECK_FALSE(v->allows(m, 24));  // <ctrl>
    CHECK_FALSE(v->allows(m, 0));   // ""
    REQUIRE(m.accept_token(26));
    check_mask(*v, m);
    CHECK(v->allows(m, 25));
    CHECK_FALSE(m.accept_token(24));
    CHECK_FALSE(m.accept_token(0));
    REQUIRE(m.accept_token(25));
    CHECK(m.is_ended());
    check_mask(*v, m);
    CHECK_FALSE(m.accept_token(26));
    m.rollback(1);  // the end token is rolled back like any other
    CHECK_FALSE(m.is_ended());
    CHECK(m.accept_token(9) == false);  // a lone continuation byte
    CHECK_THROWS_AS(Matcher(g).accept_token(1), Error);
}

TEST_CASE("token mask: partial UTF-8 tokens", "[grammar]") {
    auto v = small_vocab();
    auto g = Grammar::parse("root ::= \"\\\"\" [é€]* \"\\\"\"\n");
    Matcher m(g, v);
    REQUIRE(m.accept_token(3));  // "
    CHECK(v->allows(m, 7));      // é
    CHECK(v->allows(m, 8));      // C3, the first half of é
    CHECK(v->allows(m, 11));     // E2, the first byte of €
    CHECK_FALSE(v->allows(m, 9));  // A9 alone
    CHECK_FALSE(v->allows(m, 33)); // F0 9F: no 4-byte character in the class
    REQUIRE(m.accept_token(11));
    CHECK(v->allows(m, 12));     // 82 AC completes €
    CHECK_FALSE(v->allows(m, 9));
    CHECK_FALSE(v->allows(m, 3));  // a quote inside the unfinished character
    check_mask(*v, m);
    REQUIRE(m.accept_token(12));
    REQUIRE(m.accept_token(8));
    REQUIRE(m.accept_token(9));
    REQUIRE(m.accept_token(3));
    CHECK(m.is_accepting());
}

namespace {

// Draws documents from the schema's grammar; each must parse as JSON.
std::vector<ordered_json> draw(const ordered_json& schema, int n, uint64_t seed) {
    auto g = Grammar::parse(json_schema_to_gbnf(schema));
    Matcher m(g);
    std::mt19937_64 rng(seed);
    std::vector<ordered_json> out;
    for (int i = 0; i < n; ++i) {
        std::optional<std::string> doc;
        for (int tries = 0; tries < 50 && !doc; ++tries) doc = testing::random_walk(m, rng);
        REQUIRE(doc);
        INFO(*doc);
        ordered_json j;
        REQUIRE_NOTHROW(j = ordered_json::parse(*doc));
        out.push_back(j);
    }
    return out;
}

}  // namespace

TEST_CASE("json schema: documents drawn from the grammar hold the schema's shape", "[grammar]") {
    auto person = ordered_json::parse(R"({
      "type": "object",
      "properties": {
        "name": {"type": "string", "minLength": 1, "maxLength": 6},
        "age": {"type": "integer", "minimum": 18, "maximum": 99},
        "role": {"enum": ["admin", "user"]},
        "tags": {"type": "array", "items": {"type": "string"}, "minItems": 1, "maxItems": 3},
        "when": {"type": "string", "format": "date"},
        "id": {"type": "string", "format": "uuid"}
      },
      "required": ["name", "age", "tags"]
    })");
    for (const auto& d : draw(person, 100, 1)) {
        REQUIRE(d.is_object());
        REQUIRE(d.contains("name"));
        REQUIRE(d.contains("age"));
        std::vector<std::string> keys;
        for (const auto& [k, v] : d.items()) keys.push_back(k);
        // Declared order kept, optional ones possibly absent, nothing else.
        std::vector<std::string> order = {"name", "age", "role", "tags", "when", "id"};
        size_t at = 0;
        for (const auto& k : keys) {
            while (at < order.size() && order[at] != k) ++at;
            REQUIRE(at < order.size());
        }
        CHECK(d["age"].get<int>() >= 18);
        CHECK(d["age"].get<int>() <= 99);
        CHECK(d["tags"].size() >= 1);
        CHECK(d["tags"].size() <= 3);
        if (d.contains("role")) CHECK((d["role"] == "admin" || d["role"] == "user"));
        if (d.contains("when")) CHECK(d["when"].get<std::string>().size() == 10);
        if (d.contains("id")) CHECK(d["id"].get<std::string>().size() == 36);
    }
    auto tree = ordered_json::parse(R"({
      "$defs": {"node": {"type": "object", "properties": {"v": {"type": "integer"},
                "kids": {"type": "array", "items": {"$ref": "#/$defs/node"}}}, "required": ["v", "kids"]}},
      "$ref": "#/$defs/node"
    })");
    std::function<void(const ordered_json&)> check_node = [&](const ordered_json& n) {
        REQUIRE(n.is_object());
        REQUIRE(n["v"].is_number_integer());
        for (const auto& k : n["kids"]) check_node(k);
    };
    for (const auto& d : draw(tree, 50, 2)) check_node(d);
    auto choice = ordered_json::parse(R"({"anyOf": [{"type": "integer"}, {"type": "array", "items": {"type": "boolean"}, "maxItems": 2}],
                                          "$comment": "integers or short boolean arrays"})");
    for (const auto& d : draw(choice, 50, 3)) {
        if (d.is_array()) {
            CHECK(d.size() <= 2);
            for (const auto& b : d) CHECK(b.is_boolean());
        } else {
            CHECK(d.is_number_integer());
        }
    }
    auto pat = ordered_json::parse(R"({"type": "string", "pattern": "^(ab|cd)+-[0-9]{2}$"})");
    for (const auto& d : draw(pat, 50, 4)) {
        std::string s = d.get<std::string>();
        REQUIRE(s.size() >= 5);
        CHECK(s[s.size() - 3] == '-');
    }
    for (const auto& d : draw(ordered_json::parse(R"({"type": "object"})"), 50, 5)) CHECK(d.is_object());
}

TEST_CASE("json schema: the output reads like llama.cpp's converter", "[grammar]") {
    std::string g = json_schema_to_gbnf(ordered_json::parse(R"({"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]})"));
    CHECK_THAT(g, Catch::StartsWith("root ::= \"{\" space root-a-kv \"}\" space\n"));
    CHECK_THAT(g, Catch::Contains("space ::= | \" \" | \"\\n\"{1,2} [ \\t]{0,20}\n"));
    CHECK_THAT(g, Catch::Contains("root-a-kv ::= \"\\\"a\\\"\" space \":\" space string\n"));
    CHECK_THAT(g, Catch::Contains("string ::= \"\\\"\" char* \"\\\"\" space\n"));
    CHECK_THAT(json_object_gbnf(), Catch::StartsWith("root ::= object\n"));
    // Additional properties: other keys than the declared ones, so a duplicate cannot slip in.
    auto open = Grammar::parse(json_schema_to_gbnf(ordered_json::parse(
        R"({"type": "object", "properties": {"id": {"type": "integer"}}, "required": ["id"], "additionalProperties": {"type": "boolean"}})")));
    CHECK(full_match(open, R"({"id": 1, "idx": true, "i": false, "x": true})"));
    CHECK_FALSE(full_match(open, R"({"id": 1, "id": true})"));
    CHECK_FALSE(full_match(open, R"({"id": 1, "x": 2})"));
    CHECK_FALSE(full_match(open, R"({"x": true})"));
}

TEST_CASE("json schema: what cannot be expressed is refused with the JSON pointer", "[grammar]") {
    auto err = [](const char* schema) { return error_of([&] { json_schema_to_gbnf(ordered_json::parse(schema)); }); };
    CHECK_THAT(err(R"({"not": {"type": "string"}})"), Catch::Contains("at #/not") && Catch::Contains("not supported"));
    CHECK_THAT(err(R"({"properties": {"a": {"$ref": "#/$defs/missing"}}})"), Catch::Contains("at #/properties/a/$ref") && Catch::Contains("does not resolve"));
    CHECK_THAT(err(R"({"$ref": "https://example.com/s.json"})"), Catch::Contains("only local references"));
    CHECK_THAT(err(R"({"type": 5})"), Catch::Contains("at #/type"));
    CHECK_THAT(err(R"({"type": "strin"})"), Catch::Contains("unknown type 'strin'"));
    CHECK_THAT(err(R"({"type": "object", "properties": {"x/y": {"type": "number", "minimum": 0}}})"),
               Catch::Contains("at #/properties/x~1y/minimum"));
    CHECK_THAT(err(R"({"type": "string", "pattern": "^(?=a)b$"})"), Catch::Contains("at #/pattern") && Catch::Contains("lookaround"));
    CHECK_THAT(err(R"({"type": "string", "pattern": "(a)\\1"})"), Catch::Contains("backreferences"));
    CHECK_THAT(err(R"({"type": "string", "pattern": "a^b"})"), Catch::Contains("'^' inside"));
    CHECK_THAT(err(R"({"type": "array", "items": {"type": "integer"}, "uniqueItems": true})"), Catch::Contains("#/uniqueItems"));
    CHECK_THAT(err(R"({"type": "array", "minItems": -1})"), Catch::Contains("#/minItems"));
    CHECK_THAT(err(R"({"type": "object", "properties": {"a": {}}, "required": ["b"]})"), Catch::Contains("#/required/0"));
    CHECK_THAT(err(R"({"allOf": [{"type": "string"}, {"type": "string", "maxLength": 3}]})"), Catch::Contains("#/allOf/0/type"));
    CHECK_THAT(err(R"({"properties": {"a": false}})"), Catch::Contains("#/properties/a") && Catch::Contains("allows nothing"));
    CHECK_THAT(err(R"({"type": "string", "pattern": "a", "maxLength": 3})"), Catch::Contains("#/pattern"));
    CHECK_THAT(err(R"({"type": "integer", "minimum": 5, "maximum": 4})"), Catch::Contains("no integer"));
    CHECK_THAT(err("[1, 2]"), Catch::Contains("at #:"));
}

TEST_CASE("GBNF: mangled grammars parse or fail with Error, never worse", "[grammar]") {
    // Seeded mutations of real grammars (bytes replaced, inserted, deleted): the parser must
    // answer with a grammar or an Error, and a grammar it takes must run.
    std::mt19937_64 rng(11);
    const std::string bases[] = {kJson, kArith, json_schema_to_gbnf(ordered_json::parse(R"({"type": "object",
        "properties": {"a": {"type": "string", "pattern": "^[a-z]{2,4}$"}, "b": {"type": "integer", "minimum": -5}}})"))};
    const char alphabet[] = "()[]{}|*+?.\"\\#-^:=,0123456789ax \n\t\x80\xC3\xFF";
    int parsed = 0;
    for (int i = 0; i < 3000; ++i) {
        std::string g = bases[size_t(i) % 3];
        for (int k = 0, n = 1 + int(rng() % 4); k < n; ++k) {
            size_t at = rng() % (g.size() + 1);
            char c = alphabet[rng() % (sizeof alphabet - 1)];
            switch (rng() % 3) {
                case 0: if (at < g.size()) g[at] = c; break;
                case 1: g.insert(g.begin() + long(at), c); break;
                default: if (at < g.size()) g.erase(at, 1); break;
            }
        }
        std::shared_ptr<const Grammar> gr;
        try {
            gr = Grammar::parse(g);
        } catch (const Error&) {
            continue;
        }
        ++parsed;
        try {
            Matcher m(gr);
            std::mt19937_64 walk_rng{static_cast<uint64_t>(i)};
            testing::random_walk(m, walk_rng, 64, 0.2);
        } catch (const Error&) {
            // a limit (ambiguity) is a fine answer too
        }
    }
    CHECK(parsed > 100);
}
