#include <algorithm>
#include <cstdio>
#include <iostream>
#include <unistd.h>

#include "tools/app.h"
#include "tools/generate.h"

namespace ls::cli {

// Each turn renders the whole conversation with the chat template, keeps the longest
// prefix already in the KV cache (seq_rm) and evaluates only the rest; if the ring can no
// longer restore that point, the conversation is evaluated again from the start. Either
// way the logits equal a fresh evaluation of the transcript.
int cmd_chat(const Options& o) {
    App app = open_app(o);
    Session s(*app.model, *app.backend, app.session_params(o));
    Sampler sampler(sampler_params(o));
    std::vector<ChatMsg> msgs;
    if (!o.system.empty()) msgs.push_back({"system", o.system});
    std::vector<int32_t> cached;  // tokens whose K/V the session holds, in order
    const bool tty = isatty(fileno(stdin));
    std::fprintf(stderr, "lockstep chat: %s (type /exit or end input to quit)\n", app.model_path.c_str());
    std::string line;
    while (true) {
        if (tty) std::fprintf(stderr, "\n> ");
        if (!std::getline(std::cin, line) || line == "/exit") break;
        if (line.empty()) continue;
        msgs.push_back({"user", line});
        const std::string text = format_chat(msgs, true, app.model->hparams().arch);
        std::vector<int32_t> ids = app.tokenizer->encode(text, app.tokenizer->add_bos_default(), true);
        size_t common = 0;
        while (common < cached.size() && common < ids.size() && cached[common] == ids[common]) ++common;
        if (common == ids.size()) --common;  // at least one token must be evaluated for logits
        if (!s.kv().seq_rm(0, int64_t(common))) {
            s.kv().clear();
            common = 0;
        }
        cached.resize(common);
        std::vector<int32_t> rest(ids.begin() + common, ids.end());
        if (int64_t(ids.size()) >= s.params().n_ctx)
            throw std::runtime_error("conversation has " + std::to_string(ids.size()) + " tokens, more than the context of " +
                                     std::to_string(s.params().n_ctx) + " (raise -c)");
        std::vector<int32_t> history = cached, generated;
        std::string reply;
        generate(s, *app.tokenizer, sampler, rest, o.n_predict, history, generated, [&](const std::string& t) {
            reply += t;
            std::fputs(t.c_str(), stdout);
            std::fflush(stdout);
        });
        std::printf("\n");
        std::fflush(stdout);
        cached = ids;
        // The session evaluated every generated token but the last one sampled.
        cached.insert(cached.end(), generated.begin(), generated.end());
        cached.resize(size_t(s.kv().seq_len(0)));
        msgs.push_back({"assistant", reply});
    }
    return 0;
}

}  // namespace ls::cli
