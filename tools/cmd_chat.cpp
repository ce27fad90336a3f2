#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <unistd.h>

#include "core/generate.h"
#include "tools/app.h"

namespace ls::cli {

// Each turn renders the whole conversation with the chat template and hands it to
// generate(), which keeps the longest prefix already in the KV cache and evaluates only the
// rest; if the ring can no longer restore that point, the conversation is evaluated again
// from the start. Either way the logits equal a fresh evaluation of the transcript.
int cmd_chat(const Options& o) {
    App app = open_app(o);
    Session s(*app.model, *app.backend, app.session_params(o));
    Sampler sampler(app.sampler_params(o));
    std::vector<ChatMsg> msgs;
    if (!o.system.empty()) msgs.push_back({"system", o.system});
    const bool tty = isatty(fileno(stdin));
    const bool verbose = std::getenv("LOCKSTEP_CHAT_STATS") != nullptr;
    std::fprintf(stderr, "lockstep chat: %s (type /exit or end input to quit)\n", app.model_path.c_str());
    std::string line;
    while (true) {
        if (tty) std::fprintf(stderr, "\n> ");
        if (!std::getline(std::cin, line) || line == "/exit") break;
        if (line.empty()) continue;
        msgs.push_back({"user", line});
        const std::string text = format_chat(msgs, true, app.model->hparams().arch);
        const std::vector<int32_t> ids = app.tokenizer->encode(text, app.tokenizer->add_bos_default(), true);
        if (int64_t(ids.size()) >= s.params().n_ctx)
            throw std::runtime_error("conversation has " + std::to_string(ids.size()) + " tokens, more than the context of " +
                                     std::to_string(s.params().n_ctx) + " (raise -c)");
        std::string reply;
        GenerateResult r = generate(s, *app.tokenizer, sampler, ids, o.n_predict, 0, [&](const std::string& t) {
            reply += t;
            std::fputs(t.c_str(), stdout);
            std::fflush(stdout);
        });
        std::printf("\n");
        std::fflush(stdout);
        if (verbose)
            std::fprintf(stderr, "[turn: %lld prompt tokens reused, %lld evaluated, %zu generated]\n", (long long)r.n_reused,
                         (long long)r.n_evaluated, r.tokens.size());
        msgs.push_back({"assistant", reply});
    }
    return 0;
}

}  // namespace ls::cli
