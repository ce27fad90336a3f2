// JSON Schema -> GBNF, in the rule language of llama.cpp's converter (a `space` rule after
// every value, primitives named number / integer / string / char / value / object / array ...),
// so a grammar produced here reads like one produced there.
//
// Whitespace: `space ::= | " " | "\n"{1,2} [ \t]{0,20}` after each value, ':' and ',' (as
// llama.cpp): a model may pretty-print, but cannot run on in whitespace forever.
// Objects: properties in their declared order, required and optional interleaved as declared
// (an optional one may be left out, order kept). Without `additionalProperties`, an object
// that lists `properties` takes no other keys (llama.cpp's choice, and OpenAI's strict mode);
// `additionalProperties: true` or a schema allows more keys after the declared ones, whose
// names differ from the declared names (written without escapes, so a duplicate cannot hide
// behind one). An object with neither is any object.
//
// What the grammar cannot express, or a schema that is malformed, is refused with an Error
// naming the JSON pointer of the offending keyword; see json_schema.cpp for the list.
#pragma once
#include <string>

#include <nlohmann/json.hpp>

#include "core/grammar/grammar.h"

namespace ls::grammar {

// The GBNF for documents valid under `schema` (its start rule is `root`). Throws Error.
std::string json_schema_to_gbnf(const nlohmann::ordered_json& schema);

// response_format {"type": "json_object"}: any JSON object.
std::string json_object_gbnf();

// A regular expression (JSON Schema's `pattern`, ECMA-262 subset) -> a GBNF expression for the
// *content* of a JSON string (between its quotes) whose decoded value the pattern matches
// (searched, as JSON Schema does: an unanchored side may have anything around it). `char_rule`
// is the rule name of one JSON string character (escapes included). Throws Error on what it
// cannot express: lookaround, backreferences, \b, \p{..}, anchors inside the pattern.
std::string regex_to_gbnf(const std::string& pattern, const std::string& char_rule);

}  // namespace ls::grammar
