// A reranker's input: one query and one document as the tokens it was trained on, as
// llama-server's format_prompt_rerank builds them.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "core/text/tokenizer.h"

namespace ls {

// With the file's rerank template (tokenizer.chat_template.rerank, Qwen3's rerankers):
// "{query}" and "{document}" replaced in it, then tokenized with special tokens parsed and
// nothing added. Without one: BOS (where the vocabulary adds it), the query, EOS (where it
// adds one; [SEP] stands in for a vocabulary with no EOS), [SEP] (where it adds one), the
// document, EOS again (where added): BERT's [CLS] query [SEP] document. Query and document
// are tokenized as text (their special-token spellings are not parsed).
std::vector<int32_t> rerank_prompt(const Tokenizer& tok, const std::string& rerank_template, const std::string& query,
                                   const std::string& document);

}  // namespace ls
