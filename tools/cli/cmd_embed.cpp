// lockstep embed: llama-embedding's job. Each text is tokenized as the server does (the
// vocabulary's BOS / EOS where it adds them), evaluated alone in sequence 0 in ubatch chunks,
// pooled and normalized (core/runtime/embed.h), and printed.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>

#include "core/runtime/embed.h"
#include "tools/cli/app.h"

namespace ls::cli {

int cmd_embed(const Options& o) {
    std::vector<std::string> texts = o.prompts;
    if (!o.file.empty()) {
        std::ifstream f(o.file, std::ios::binary);
        if (!f) throw std::runtime_error("cannot read the text file " + o.file);
        for (std::string line; std::getline(f, line);) {
            if (!line.empty() && line.back() == '\r') line.pop_back();
            if (!line.empty()) texts.push_back(line);
        }
        if (texts.empty()) throw UsageError("the text file " + o.file + " has no non-empty line");
    }
    if (texts.empty()) throw UsageError("embed needs text: -p TEXT (repeatable) or -f FILE (one text per line)");
    for (size_t i = 0; i < texts.size(); ++i)
        if (texts[i].empty()) throw UsageError("text " + std::to_string(i + 1) + " is empty");
    App app = open_app(o);
    const Pooling pooling = o.pooling.empty() ? model_pooling(*app.model) : parse_pooling(o.pooling);
    if (pooling == Pooling::None)
        throw std::runtime_error("this model has no pooling (its GGUF sets no " + app.model->hparams().arch +
                                 ".pooling_type): choose one with --pooling mean|cls|last");
    Session s(*app.model, *app.backend, app.session_params(o));
    std::vector<std::vector<float>> out;
    size_t n_tokens = 0;
    const auto t0 = std::chrono::steady_clock::now();
    for (size_t i = 0; i < texts.size(); ++i) {
        const std::vector<int32_t> ids = app.tokenizer->encode(texts[i], app.tokenizer->add_bos_default(), true);
        if (int64_t(ids.size()) > s.params().n_ctx)
            throw std::runtime_error("text " + std::to_string(i + 1) + " has " + std::to_string(ids.size()) + " tokens, more than the context of " +
                                     std::to_string(s.params().n_ctx) + " (raise -c)");
        n_tokens += ids.size();
        out.push_back(embed(s, 0, ids, pooling, o.embd_normalize));
    }
    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    auto print_vec = [](const std::vector<float>& v) {
        for (size_t j = 0; j < v.size(); ++j) std::printf("%s%.9g", j ? "," : "", double(v[j]));
    };
    if (o.embd_output_format == "json") {
        std::printf("{\n  \"object\": \"list\",\n  \"data\": [\n");
        for (size_t i = 0; i < out.size(); ++i) {
            std::printf("    {\"object\": \"embedding\", \"index\": %zu, \"embedding\": [", i);
            print_vec(out[i]);
            std::printf("]}%s\n", i + 1 < out.size() ? "," : "");
        }
        std::printf("  ]\n}\n");
    } else if (o.embd_output_format == "array") {
        std::printf("[");
        for (size_t i = 0; i < out.size(); ++i) {
            std::printf("%s[", i ? "," : "");
            print_vec(out[i]);
            std::printf("]");
        }
        std::printf("]\n");
    } else {
        for (const auto& v : out) {
            for (size_t j = 0; j < v.size(); ++j) std::printf("%s%.9g", j ? " " : "", double(v[j]));
            std::printf("\n");
        }
    }
    std::fprintf(stderr, "embed: %zu texts, %zu tokens, %s pooling, normalize %d, in %.3f s (%.1f embeddings/s, %.1f tokens/s)\n",
                 texts.size(), n_tokens, pooling_name(pooling), o.embd_normalize, secs, double(texts.size()) / std::max(secs, 1e-9),
                 double(n_tokens) / std::max(secs, 1e-9));
    return 0;
}

}  // namespace ls::cli
