#include "tools/generate.h"

#include <chrono>

#include "tools/cli_args.h"

namespace ls::cli {

SamplerParams sampler_params(const Options& o) {
    SamplerParams p;
    p.temp = o.temp;
    p.top_k = o.top_k;
    p.top_p = o.top_p;
    p.min_p = o.min_p;
    p.repeat_penalty = o.repeat_penalty;
    p.seed = o.seed;
    return p;
}

GenStats generate(Session& s, const Tokenizer& tok, Sampler& sampler, const std::vector<int32_t>& prompt,
                  int64_t n_predict, std::vector<int32_t>& history, std::vector<int32_t>& generated,
                  const std::function<void(const std::string&)>& out) {
    using clock = std::chrono::steady_clock;
    GenStats st;
    st.n_prompt = int64_t(prompt.size());
    auto t0 = clock::now();
    std::vector<float> logits = s.eval(prompt);
    st.prompt_s = std::chrono::duration<double>(clock::now() - t0).count();
    history.insert(history.end(), prompt.begin(), prompt.end());
    Utf8Stream utf8;
    t0 = clock::now();
    const int64_t n_vocab = s.n_vocab();
    for (int64_t i = 0; n_predict < 0 || i < n_predict; ++i) {
        int32_t id = sampler.sample(logits.data(), int(n_vocab), history);
        if (tok.is_eog(id)) break;
        generated.push_back(id);
        history.push_back(id);
        out(utf8.push(tok.token_to_piece(id, false)));
        ++st.n_gen;
        if (s.kv().seq_len(0) + 1 > s.params().n_ctx) break;  // context full
        if (n_predict >= 0 && i + 1 == n_predict) break;      // no need to evaluate the last one
        logits = s.eval({id});
    }
    out(utf8.flush());
    st.gen_s = std::chrono::duration<double>(clock::now() - t0).count();
    return st;
}

}  // namespace ls::cli
