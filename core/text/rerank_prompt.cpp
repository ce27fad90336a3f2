#include "core/text/rerank_prompt.h"

namespace ls {

std::vector<int32_t> rerank_prompt(const Tokenizer& tok, const std::string& rerank_template, const std::string& query,
                                   const std::string& document) {
    if (!rerank_template.empty()) {
        // One pass over the template: a query holding "{document}" stays as it is.
        std::string prompt;
        for (size_t i = 0; i < rerank_template.size();) {
            if (rerank_template.compare(i, 7, "{query}") == 0) {
                prompt += query;
                i += 7;
            } else if (rerank_template.compare(i, 10, "{document}") == 0) {
                prompt += document;
                i += 10;
            } else {
                prompt += rerank_template[i++];
            }
        }
        return tok.encode_plain(prompt, true);
    }
    std::vector<int32_t> out;
    const int32_t eos = tok.eos() >= 0 ? tok.eos() : tok.sep();
    if (tok.add_bos_default() && tok.bos() >= 0) out.push_back(tok.bos());
    const std::vector<int32_t> q = tok.encode_plain(query, false), d = tok.encode_plain(document, false);
    out.insert(out.end(), q.begin(), q.end());
    if (tok.add_eos_default() && eos >= 0) out.push_back(eos);
    if (tok.add_sep_default() && tok.sep() >= 0) out.push_back(tok.sep());
    out.insert(out.end(), d.begin(), d.end());
    if (tok.add_eos_default() && eos >= 0) out.push_back(eos);
    return out;
}

}  // namespace ls
