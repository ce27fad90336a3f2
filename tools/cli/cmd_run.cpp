#include <cstdio>
#include <fstream>
#include <sstream>

#include "tools/cli/app.h"
#include "core/runtime/generate.h"

namespace ls::cli {

int cmd_run(const Options& o) {
    if (!o.prompt_set && o.file.empty()) throw UsageError("run needs a prompt: -p TEXT or -f FILE");
    std::string prompt = o.prompt;
    if (!o.file.empty()) {
        std::ifstream f(o.file, std::ios::binary);
        if (!f) throw std::runtime_error("cannot read prompt file " + o.file);
        std::stringstream ss;
        ss << f.rdbuf();
        prompt = ss.str();
    }
    App app = open_app(o);
    Session s(*app.model, *app.backend, app.session_params(o));
    std::vector<int32_t> ids = app.tokenizer->encode(prompt, app.tokenizer->add_bos_default(), true);
    if (int64_t(ids.size()) >= s.params().n_ctx)
        throw std::runtime_error("prompt has " + std::to_string(ids.size()) + " tokens, more than the context of " +
                                 std::to_string(s.params().n_ctx) + " leaves room for (raise -c)");
    Sampler sampler(app.sampler_params(o));
    std::unique_ptr<Speculator> spec = app.speculator(o, s);
    std::fputs(prompt.c_str(), stdout);
    std::fflush(stdout);
    GenerateResult r = generate(s, *app.tokenizer, sampler, ids, o.n_predict, 0, [](const std::string& t) {
        std::fputs(t.c_str(), stdout);
        std::fflush(stdout);
    }, nullptr, spec.get());
    std::printf("\n");
    const auto n_gen = (long long)r.tokens.size();
    std::fprintf(stderr, "\nprompt: %lld tokens in %.2f s (%.1f tokens/s); generation: %lld tokens in %.2f s (%.1f tokens/s)%s\n",
                 (long long)r.n_evaluated, r.prompt_s, r.n_evaluated / std::max(r.prompt_s, 1e-9), n_gen, r.gen_s,
                 n_gen / std::max(r.gen_s, 1e-9), r.context_full ? "; stopped: context full (raise -c)" : "");
    if (spec)
        std::fprintf(stderr, "speculation (%s): %lld of %lld guesses accepted (%.1f%%) in %lld verification steps\n",
                     spec_mode_name(spec->params().mode), (long long)r.spec.n_accepted, (long long)r.spec.n_guessed,
                     100.0 * r.spec.acceptance(), (long long)r.spec.n_steps);
    return 0;
}

}  // namespace ls::cli
