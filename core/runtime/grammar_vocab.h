// The vocabulary as a grammar sees it (core/grammar/token_mask.h): each token's bytes as the
// reply's text holds them, which tokens end generation, and which never stand for text.
#pragma once
#include <memory>
#include <string_view>
#include <vector>

#include "core/grammar/token_mask.h"
#include "core/text/tokenizer.h"

namespace ls {

// Built once per model (a trie over the vocabulary: ~0.1-0.3 s for 262144 tokens); shared by
// every sequence's sampler. Control tokens are never text (a grammar cannot ask for <bos>);
// user-defined ones (a template's <tool_call>) are their text, as the reply shows them.
// text_markers: control tokens that are their text all the same (a tool-call format's markers,
// which the server shows in the reply: a forced call's grammar asks for them, and the model
// writes them as its one token, not spelt out); those that end generation stay endings only.
std::shared_ptr<const grammar::TokenMask> grammar_vocab(const Tokenizer& tok, const std::vector<std::string_view>& text_markers = {});

}  // namespace ls
