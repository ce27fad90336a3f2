// Recursive-descent parser over the lexer's tokens, following jinja2's grammar and precedence
// (parser.py): e.g. `**` is left-associative and `-x|f` applies the filter to `-x`.
#pragma once
#include <vector>

#include "core/jinja/ast.h"
#include "core/jinja/lexer.h"

namespace ls::jinja {

// Throws Error naming the line and what was expected.
Body parse(const std::vector<Token>& tokens);

}  // namespace ls::jinja
