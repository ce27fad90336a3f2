#include "core/runtime/generate.h"

#include <chrono>
#include <stdexcept>

namespace ls {

std::string reply_piece(const Tokenizer& tok, int32_t id, const ChatTemplate* reply) {
    if (!reply || tok.token_type(id) != TokenType::Control) return tok.token_to_piece(id, false);
    const std::string text = tok.token_to_piece(id, true);
    return reply->marker_piece(text) ? text : std::string();
}

GenerateResult generate(Session& s, const Tokenizer& tok, Sampler& sampler, const std::vector<int32_t>& prompt,
                        int64_t n_predict, int seq, const std::function<void(const std::string&)>& on_text,
                        const ChatTemplate* reply) {
    using clock = std::chrono::steady_clock;
    if (prompt.empty()) throw std::invalid_argument("generate: empty prompt");
    if (int64_t(prompt.size()) >= s.params().n_ctx)
        throw std::length_error("prompt has " + std::to_string(prompt.size()) + " tokens, which leaves no room in the context of " +
                                std::to_string(s.params().n_ctx) + " (raise -c)");
    GenerateResult r;
    auto t0 = clock::now();
    r.n_reused = s.reuse_prefix(seq, prompt);
    const std::vector<int32_t> rest(prompt.begin() + r.n_reused, prompt.end());
    r.n_evaluated = int64_t(rest.size());
    std::vector<float> logits = s.eval(rest, -1, seq);
    // Recurrent models: the next turn of a chat can resume from here (its transcript starts
    // with this prompt) even when the reply does not re-tokenize to the generated tokens.
    s.checkpoint(seq);
    r.prompt_s = std::chrono::duration<double>(clock::now() - t0).count();
    Utf8Stream utf8;
    t0 = clock::now();
    const int64_t n_vocab = s.n_vocab();
    for (int64_t i = 0; n_predict < 0 || i < n_predict; ++i) {
        // The penalty history is everything the sequence holds: prompt and generated tokens.
        const int32_t id = sampler.sample(logits.data(), int(n_vocab), s.seq_tokens(seq));
        if (tok.is_eog(id)) {
            r.stopped_at_eog = true;
            break;
        }
        r.tokens.push_back(id);
        on_text(utf8.push(reply_piece(tok, id, reply)));
        if (n_predict >= 0 && i + 1 == n_predict) break;  // no need to evaluate the last one
        if (s.seq_len(seq) + 1 > s.params().n_ctx) {
            r.context_full = true;
            break;
        }
        logits = s.eval({id}, -1, seq);
    }
    on_text(utf8.flush());
    r.gen_s = std::chrono::duration<double>(clock::now() - t0).count();
    return r;
}

}  // namespace ls
