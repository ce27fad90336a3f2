#include "core/runtime/generate.h"

#include <chrono>
#include <stdexcept>

#include "core/runtime/decode_loop.h"

namespace ls {

GenerateResult generate(Session& s, const Tokenizer& tok, Sampler& sampler, const std::vector<int32_t>& prompt,
                        int64_t n_predict, int seq, const std::function<void(const std::string&)>& on_text,
                        const ChatTemplate* reply, Speculator* spec) {
    using clock = std::chrono::steady_clock;
    if (prompt.empty()) throw std::invalid_argument("generate: empty prompt");
    if (seq < 0 || seq >= s.params().n_seq) throw std::out_of_range("generate: sequence " + std::to_string(seq) + " is not a slot of the session");
    GenerateResult r;
    Utf8Stream utf8;
    auto t0 = clock::now();
    const SpecStats spec_before = spec ? spec->stats() : SpecStats{};
    std::string error;
    DecodeLoop::Start st;
    st.prompt = prompt;
    st.sampler = &sampler;
    st.spec = spec;
    st.n_predict = n_predict;
    st.hooks.on_prompt_done = [&] {
        const auto now = clock::now();
        r.prompt_s = std::chrono::duration<double>(now - t0).count();
        t0 = now;
    };
    st.hooks.on_token = [&](int32_t id, bool) {
        r.tokens.push_back(id);
        on_text(utf8.push(reply_piece(tok, id, reply)));
        return true;
    };
    st.hooks.on_end = [&](EndReason why, const std::string& e) {
        r.stopped_at_eog = why == EndReason::Eog;
        r.context_full = why == EndReason::ContextFull;
        if (why == EndReason::Error) error = e;
    };
    // One slot of the loop the server runs many of (a loop over this session's sequence
    // `seq`; the session's other sequences are left alone).
    DecodeLoop loop(s, tok, LoopParams{});
    r.n_reused = loop.start(seq, std::move(st));
    r.n_evaluated = int64_t(prompt.size()) - r.n_reused;
    while (loop.step()) {
    }
    if (!error.empty()) throw std::runtime_error(error);
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
