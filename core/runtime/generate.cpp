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
                        const ChatTemplate* reply, Speculator* spec) {
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
    const int n_vocab = int(s.n_vocab());
    const int64_t n_ctx = s.params().n_ctx;
    const SpecStats spec_before = spec ? spec->stats() : SpecStats{};
    // Takes a sampled token; false when generation ends with it (the token itself is kept
    // unless it ends generation).
    auto take = [&](int32_t id) {
        if (tok.is_eog(id)) {
            r.stopped_at_eog = true;
            return false;
        }
        r.tokens.push_back(id);
        on_text(utf8.push(reply_piece(tok, id, reply)));
        return !(n_predict >= 0 && int64_t(r.tokens.size()) == n_predict);  // no need to evaluate the last one
    };
    // The penalty history is everything the sequence holds: prompt and generated tokens.
    int32_t id = sampler.sample(logits.data(), n_vocab, s.seq_tokens(seq));
    bool go = take(id);
    std::vector<int32_t> guesses;
    while (go) {
        // `id` is sampled but not evaluated; it goes at position `start`.
        const int64_t start = s.seq_len(seq);
        if (start + 1 > n_ctx) {
            r.context_full = true;
            break;
        }
        guesses.clear();
        const auto ts = clock::now();  // a step's time includes making its guesses (a draft model's steps)
        if (spec) {
            // Guesses stay within one ubatch (so a windowed ring can still roll back), within
            // the context, and within what is left to generate.
            int64_t k = std::min<int64_t>({spec->budget(), s.params().n_ubatch - 1, n_ctx - start - 1});
            if (n_predict >= 0) k = std::min<int64_t>(k, n_predict - int64_t(r.tokens.size()) - 1);
            if (k > 0) guesses = spec->guess(s.seq_tokens(seq), id, int(k));
            if (int(guesses.size()) < std::max(1, spec->params().draft_min)) guesses.clear();
        }
        if (!guesses.empty()) s.checkpoint_step(seq);
        Batch b;
        b.add(id, seq, int32_t(start), true);
        for (size_t i = 0; i < guesses.size(); ++i) b.add(guesses[i], seq, int32_t(start + 1 + int64_t(i)), true);
        logits = s.decode(b);
        const double step_s = std::chrono::duration<double>(clock::now() - ts).count();
        if (spec && guesses.empty()) spec->plain(step_s);
        // Row i holds the logits after the token at position start + i; the token it samples
        // goes at start + i + 1, and its history is the sequence's first start + i + 1 tokens.
        const int32_t* hist = s.seq_tokens(seq).data();
        size_t rows = 0, accepted = 0;
        while (true) {
            const size_t i = rows++;
            id = sampler.sample(logits.data() + i * size_t(n_vocab), n_vocab, hist, size_t(start) + i + 1, start + int64_t(i) + 1);
            go = take(id);
            if (!go || i == guesses.size() || id != guesses[i]) break;
            ++accepted;  // the next row's input is the token just sampled
        }
        if (spec && !guesses.empty()) spec->record(int(guesses.size()), int(accepted), step_s);
        spec_roll_back(s, seq, start + int64_t(rows), start);
    }
    on_text(utf8.flush());
    r.gen_s = std::chrono::duration<double>(clock::now() - t0).count();
    if (spec) {
        r.spec.n_steps = spec->stats().n_steps - spec_before.n_steps;
        r.spec.n_guessed = spec->stats().n_guessed - spec_before.n_guessed;
        r.spec.n_accepted = spec->stats().n_accepted - spec_before.n_accepted;
    }
    return r;
}

}  // namespace ls
