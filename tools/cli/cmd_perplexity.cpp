#include <algorithm>
#include <chrono>
#include <cstring>
#include <memory>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "tools/cli/app.h"

namespace ls::cli {

namespace {

// llama.cpp's --kl-divergence-base file: "_logits_", int32 n_ctx, n_vocab, n_chunk, the text's
// tokens (n_chunk * n_ctx int32, as tokenized: before each chunk's first becomes BOS), then
// for each scored token a row of 2 * ceil(n_vocab / 2) + 4 uint16: a float scale and a float
// lowest log-probability, then each token's log-probability as lowest + scale * q, q in
// [0, 65535] over the 16 nats below the top (lower ones at the lowest).
class LogProbFile {
public:
    LogProbFile(const std::string& path, int64_t n_ctx, int64_t n_vocab, int64_t n_chunk, const std::vector<int32_t>& toks)
        : out_(path, std::ios::binary), n_vocab_(n_vocab), row_(size_t(2 * ((n_vocab + 1) / 2) + 4)) {
        if (!out_) throw std::runtime_error("cannot write " + path);
        const int32_t head[3] = {int32_t(n_ctx), int32_t(n_vocab), int32_t(n_chunk)};
        out_.write("_logits_", 8);
        out_.write(reinterpret_cast<const char*>(head), sizeof head);
        out_.write(reinterpret_cast<const char*>(toks.data()), std::streamsize(size_t(n_chunk * n_ctx) * 4));
    }
    void add(const float* l) {
        float mx = l[0], mn = l[0];
        for (int64_t v = 1; v < n_vocab_; ++v) mx = std::max(mx, l[v]), mn = std::min(mn, l[v]);
        mn = std::max(mn, mx - 16);
        double sum = 0;
        for (int64_t v = 0; v < n_vocab_; ++v) sum += std::exp(double(l[v]) - mx);
        const float head[2] = {(mx - mn) / 65535.f, float(double(mn) - mx - std::log(sum))};
        std::memcpy(row_.data(), head, sizeof head);
        uint16_t* q = row_.data() + 4;
        for (int64_t v = 0; v < n_vocab_; ++v)
            q[v] = head[0] > 0 && l[v] > mn ? uint16_t(std::lround(std::min(65535.f, (l[v] - mn) / head[0]))) : 0;
        out_.write(reinterpret_cast<const char*>(row_.data()), std::streamsize(row_.size() * 2));
    }
    void close() {
        out_.close();
        if (!out_) throw std::runtime_error("writing the log-probability file failed");
    }

private:
    std::ofstream out_;
    int64_t n_vocab_;
    std::vector<uint16_t> row_;
};

}  // namespace

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
    std::unique_ptr<LogProbFile> lp_file;
    if (!o.kld_base.empty()) lp_file = std::make_unique<LogProbFile>(o.kld_base, n_ctx, n_vocab, n_chunk, toks);
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
            if (lp_file) lp_file->add(l);
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
    if (lp_file) lp_file->close();
    const double mean = nll / count, var = nll2 / count - mean * mean;
    const double err = count > 1 ? std::sqrt(std::max(var, 0.0) / (count - 1)) : 0.0;
    std::printf("Final estimate: PPL = %.4f +/- %.5f\n", std::exp(mean), std::exp(mean) * err);
    return 0;
}

}  // namespace ls::cli
