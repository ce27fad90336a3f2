// What a client sees of a generation: stop strings held back while partly matched and never
// sent, whole UTF-8 characters only, and each token released with the text it completes.
#include <catch2/catch.hpp>

#include "core/text/stop_text.h"

using ls::StopText;

namespace {

struct Run {
    std::vector<std::string> chunks;
    std::vector<std::vector<size_t>> chunk_tokens;  // the tokens released with each chunk
    std::vector<size_t> tokens;
    bool stopped = false;
    std::string text() const {
        std::string t;
        for (const auto& c : chunks) t += c;
        return t;
    }
};

Run feed(StopText& st, const std::vector<std::string>& pieces, bool finish = true) {
    Run r;
    auto take = [&](StopText::Out o) {
        r.chunks.push_back(o.text);
        r.chunk_tokens.push_back(o.tokens);
        r.tokens.insert(r.tokens.end(), o.tokens.begin(), o.tokens.end());
        r.stopped = r.stopped || o.stopped;
    };
    for (const auto& p : pieces) take(st.push(p));
    if (finish) take(st.finish());
    return r;
}

}  // namespace

TEST_CASE("server stop text: a stop string is never sent, even split over tokens", "[server]") {
    StopText st({"END"});
    Run r = feed(st, {"Hello", " E", "N", "D", " more"});
    CHECK(r.text() == "Hello ");
    CHECK(r.stopped);
    // "Hello" released at once; " E" waits whole (its "E" may start the stop) until the stop
    // decides, and then its " " leaves with it
    CHECK(r.chunks[0] == "Hello");
    CHECK(r.chunks[1] == "");
    CHECK(r.chunks[2] == "");
    CHECK(r.chunks[3] == " ");
    CHECK(r.chunk_tokens[3] == std::vector<size_t>{1});
    // tokens: 0 ("Hello") and 1 (" E", cut to " "); "N" and "D" are inside the stop string
    CHECK(r.tokens == std::vector<size_t>{0, 1});
}

TEST_CASE("server stop text: a partial match that does not complete is released", "[server]") {
    StopText st({"END", "\n\n"});
    Run r = feed(st, {"a E", "N", "x", "\n", "y"});
    CHECK(r.text() == "a ENx\ny");
    CHECK_FALSE(r.stopped);
    CHECK(r.tokens == std::vector<size_t>{0, 1, 2, 3, 4});
    CHECK(r.chunks[0] == "");       // "E" may start "END": the token "a E" waits whole
    CHECK(r.chunks[2] == "a ENx");  // "ENx" is not
    CHECK(r.chunk_tokens[2] == std::vector<size_t>{0, 1, 2});
}

TEST_CASE("server stop text: the earliest of several stop strings wins, inside one token", "[server]") {
    StopText st({"cd", "b"});
    Run r = feed(st, {"abcd"});
    CHECK(r.text() == "a");
    CHECK(r.stopped);
    CHECK(r.tokens == std::vector<size_t>{0});
}

TEST_CASE("server stop text: only whole UTF-8 characters leave, split pieces are joined", "[server]") {
    StopText st;
    const std::string euro = "\xE2\x82\xAC";  // U+20AC in three bytes
    Run r = feed(st, {"x", euro.substr(0, 1), euro.substr(1, 1), euro.substr(2) + "y"});
    CHECK(r.chunks[0] == "x");
    CHECK(r.chunks[1] == "");
    CHECK(r.chunks[2] == "");
    CHECK(r.chunks[3] == euro + "y");
    CHECK(r.tokens == std::vector<size_t>{0, 1, 2, 3});  // the three tokens leave with their character
    // An unfinished character at the end, and a byte that is never UTF-8, become U+FFFD.
    StopText st2;
    Run r2 = feed(st2, {"a\xFF", "b" + euro.substr(0, 2)});
    CHECK(r2.text() == "a\xEF\xBF\xBD" "b\xEF\xBF\xBD");
    CHECK(r2.tokens == std::vector<size_t>{0, 1});
}

TEST_CASE("server stop text: a stop string after a multi-byte character", "[server]") {
    StopText st({"\xC3\xA9!"});  // "é!"
    Run r = feed(st, {"caf\xC3", "\xA9", "!", "more"});
    CHECK(r.text() == "caf");
    CHECK(r.stopped);
    // token 0 ("caf" + half of é) keeps "caf"; token 1 starts inside the stop string
    CHECK(r.tokens == std::vector<size_t>{0});
}

TEST_CASE("server stop text: a token's text and its logprobs leave in one chunk", "[server]") {
    // A stop string that starts inside a token: the token's text before it was sent in one
    // chunk and the token (its logprobs) in the next.
    StopText st({"END"});
    Run r = feed(st, {"fooE", "ND"});
    CHECK(r.text() == "foo");
    CHECK(r.chunks[0] == "");
    CHECK(r.chunk_tokens[0].empty());
    CHECK(r.chunks[1] == "foo");
    CHECK(r.chunk_tokens[1] == std::vector<size_t>{0});
    // A token that ends inside a character waits for the token that completes it.
    StopText st2;
    Run r2 = feed(st2, {"a\xE2\x82", "\xAC!"});
    CHECK(r2.chunks[0] == "");
    CHECK(r2.chunks[1] == "a\xE2\x82\xAC!");
    CHECK(r2.chunk_tokens[1] == std::vector<size_t>{0, 1});
}
