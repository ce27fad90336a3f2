// lockstep embed: llama-embedding's job. Each text is tokenized as the server does (the
// vocabulary's BOS / EOS where it adds them), evaluated in its own sequence slot, up to 8
// side by side in ubatch chunks (embed_many), pooled and normalized (core/runtime/embed.h),
// and printed.
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
    // Up to 8 texts side by side (a sequence slot each): the same vectors as one at a time.
    SessionParams sp = app.session_params(o);
    sp.n_seq = int32_t(std::min<size_t>(texts.size(), 8));
    Session s(*app.model, *app.backend, sp);
    std::vector<std::vector<int32_t>> inputs;
    size_t n_tokens = 0;
    for (size_t i = 0; i < texts.size(); ++i) {
        inputs.push_back(app.tokenizer->encode(texts[i], app.tokenizer->add_bos_default(), true));
        if (int64_t(inputs.back().size()) > s.params().n_ctx)
            throw std::runtime_error("text " + std::to_string(i + 1) + " has " + std::to_string(inputs.back().size()) +
                                     " tokens, more than the context of " + std::to_string(s.params().n_ctx) + " (raise -c)");
        n_tokens += inputs.back().size();
    }
    std::vector<int> seqs;
    for (int q = 0; q < sp.n_seq; ++q) seqs.push_back(q);
    const auto t0 = std::chrono::steady_clock::now();
    const std::vector<std::vector<float>> out = embed_many(s, seqs, inputs, pooling, o.embd_normalize);
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
