#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "tools/cli/app.h"

namespace ls::cli {

// As llama.cpp's perplexity: the text is cut into chunks of n_ctx tokens, each starting
// with BOS on an empty cache; the second half of each chunk is scored (every scored token
// sees at least n_ctx/2 tokens of context).
int cmd_perplexity(const Options& o) {
    if (o.file.empty()) throw UsageError("perplexity needs a text file: -f FILE");
    std::ifstream f(o.file, std::ios::binary);
    if (!f) throw std::runtime_error("cannot read " + o.file);
    std::stringstream ss;
    ss << f.rdbuf();
    App app = open_app(o);
    SessionParams sp = app.session_params(o);
    Session s(*app.model, *app.backend, sp);
    const int64_t n_ctx = s.params().n_ctx;
    if (n_ctx < 8) throw UsageError("-c must be at least 8 for perplexity");
    std::vector<int32_t> toks = app.tokenizer->encode(ss.str(), true, false);
    const int64_t n_chunk_max = int64_t(toks.size()) / n_ctx;
    if (n_chunk_max == 0)
        throw std::runtime_error(o.file + " has " + std::to_string(toks.size()) + " tokens, fewer than one chunk of " +
                                 std::to_string(n_ctx) + " (lower -c)");
    const int64_t n_chunk = o.chunks > 0 ? std::min(o.chunks, n_chunk_max) : n_chunk_max;
    const int64_t first = n_ctx / 2, n_vocab = s.n_vocab();
    std::fprintf(stderr, "perplexity: %zu tokens, %lld chunks of %lld, scoring the last %lld tokens of each\n",
                 toks.size(), (long long)n_chunk, (long long)n_ctx, (long long)(n_ctx - first - 1));
    double nll = 0, nll2 = 0;
    int64_t count = 0;
    auto t0 = std::chrono::steady_clock::now();
    for (int64_t c = 0; c < n_chunk; ++c) {
        std::vector<int32_t> chunk(toks.begin() + c * n_ctx, toks.begin() + (c + 1) * n_ctx);
        if (app.tokenizer->bos() >= 0) chunk[0] = app.tokenizer->bos();
        s.reset();
        std::vector<float> logits = s.eval(chunk, first);
        for (int64_t i = first; i + 1 < n_ctx; ++i) {
            const float* l = logits.data() + (i - first) * n_vocab;
            float mx = l[0];
            for (int64_t v = 1; v < n_vocab; ++v) mx = std::max(mx, l[v]);
            double sum = 0;
            for (int64_t v = 0; v < n_vocab; ++v) sum += std::exp(double(l[v]) - mx);
            const double x = std::log(sum) + mx - l[chunk[i + 1]];
            nll += x;
            nll2 += x * x;
            ++count;
        }
        const double el = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        std::printf("[%lld/%lld] %.4f   (%.1f s, ~%.0f s left)\n", (long long)(c + 1), (long long)n_chunk,
                    std::exp(nll / count), el, el / (c + 1) * (n_chunk - c - 1));
        std::fflush(stdout);
    }
    const double mean = nll / count, var = nll2 / count - mean * mean;
    const double err = count > 1 ? std::sqrt(std::max(var, 0.0) / (count - 1)) : 0.0;
    std::printf("Final estimate: PPL = %.4f +/- %.5f\n", std::exp(mean), std::exp(mean) * err);
    return 0;
}

}  // namespace ls::cli
