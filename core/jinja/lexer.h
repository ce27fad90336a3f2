// Splits template source into text and tag tokens, applying whitespace control (`-`, `+`,
// trim_blocks, lstrip_blocks) exactly where jinja2's lexer does.
#pragma once
#include <string>
#include <string_view>
#include <vector>

namespace ls::jinja {

struct Token {
    enum T { Data, VarBegin, VarEnd, BlockBegin, BlockEnd, Name, String, Int, Float, Op, Eof };
    T type;
    std::string text;  // Data: the text; String: the decoded value; others: as written
    int line;
};

struct LexOptions {
    bool trim_blocks = true, lstrip_blocks = true, keep_trailing_newline = false;
};

// Throws Error on an unterminated tag, comment or string, or a character no token starts with.
std::vector<Token> lex(std::string_view source, const LexOptions& opt);

std::string describe(const Token& t);

}  // namespace ls::jinja
