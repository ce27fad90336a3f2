#include "core/runtime/embed.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace ls {

const char* pooling_name(Pooling p) {
    switch (p) {
        case Pooling::None: return "none";
        case Pooling::Mean: return "mean";
        case Pooling::Cls: return "cls";
        case Pooling::Last: return "last";
        case Pooling::Rank: return "rank";
    }
    return "?";
}

Pooling parse_pooling(const std::string& s) {
    for (int i = 0; i <= 4; ++i)
        if (s == pooling_name(Pooling(i)) || s == std::to_string(i)) return Pooling(i);
    throw std::invalid_argument("unknown pooling '" + s + "' (none, mean, cls, last or rank)");
}

Pooling model_pooling(const Model& m) {
    const std::string key = m.hparams().arch + ".pooling_type";
    const int64_t v = m.gguf().get_int(key, 0);
    if (v < 0 || v > 4) throw std::runtime_error(key + " is " + std::to_string(v) + ", not a pooling type (0..4)");
    return Pooling(v);
}

void embd_normalize(std::vector<float>& v, int norm) {
    if (norm < -1) throw std::invalid_argument("embedding normalization " + std::to_string(norm) + " is not one of -1, 0, 1, 2 or p > 2");
    if (norm == -1) return;
    // Sums in element order, in double as llama.cpp's common_embd_normalize does
    // (host arithmetic on a finished vector, the same bits on every machine).
    double sum = 0.0;
    if (norm == 0) {
        for (float x : v) sum = std::max(sum, double(std::fabs(x)));
        sum /= 32760.0;  // the int16 range
    } else if (norm == 1) {
        for (float x : v) sum += std::fabs(x);
    } else if (norm == 2) {
        for (float x : v) sum += double(x) * double(x);
        sum = std::sqrt(sum);
    } else {
        for (float x : v) sum += std::pow(std::fabs(double(x)), norm);
        sum = std::pow(sum, 1.0 / norm);
    }
    const float k = sum > 0.0 ? float(1.0 / sum) : 0.0f;
    for (float& x : v) x *= k;
}

std::vector<float> embd_truncate(const std::vector<float>& pooled, int64_t n, int norm) {
    if (n < 1 || size_t(n) > pooled.size())
        throw std::invalid_argument("dimensions " + std::to_string(n) + " outside [1, " + std::to_string(pooled.size()) + "]");
    std::vector<float> v(pooled.begin(), pooled.begin() + n);
    embd_normalize(v, norm);
    return v;
}

EmbedRun::EmbedRun(Session& s, int seq, std::vector<int32_t> tokens, Pooling pooling)
    : s_(s), seq_(seq), tokens_(std::move(tokens)), pooling_(pooling) {
    if (pooling_ == Pooling::None)
        throw std::invalid_argument("this model has no pooling (its GGUF sets no pooling_type): choose one with --pooling mean|cls|last");
    if (pooling_ == Pooling::Rank) throw std::invalid_argument("rank pooling (a reranker's classifier head) is not implemented");
    if (seq < 0 || seq >= s.params().n_seq)
        throw std::out_of_range("sequence " + std::to_string(seq) + " outside [0, " + std::to_string(s.params().n_seq) + ")");
    if (tokens_.empty()) throw std::length_error("the input is empty");
    if (int64_t(tokens_.size()) > s.params().n_ctx)
        throw std::length_error("the input has " + std::to_string(tokens_.size()) + " tokens, more than the context of " +
                                std::to_string(s.params().n_ctx) + " (raise -c)");
    const int64_t n_vocab = s.n_vocab();
    for (int32_t t : tokens_)
        if (t < 0 || t >= n_vocab)
            throw std::out_of_range("token id " + std::to_string(t) + " outside the vocabulary [0, " + std::to_string(n_vocab) + ")");
    sum_.assign(size_t(s.n_embd()), 0.0f);
}

bool EmbedRun::step(int64_t max_tokens) {
    if (done()) return true;
    // The sequence starts over at the first chunk (attention sees only this input).
    if (at_ == 0 && !s_.seq_rm(seq_, 0)) throw std::runtime_error("embedding: sequence " + std::to_string(seq_) + " could not be emptied");
    if (s_.seq_len(seq_) != int64_t(at_))
        throw std::runtime_error("embedding: sequence " + std::to_string(seq_) + " was changed while it was evaluated");
    const size_t n = tokens_.size();
    const size_t end = max_tokens <= 0 ? n : std::min(n, at_ + size_t(max_tokens));
    Batch b;
    for (size_t i = at_; i < end; ++i) {
        const bool want = pooling_ == Pooling::Mean || (pooling_ == Pooling::Cls && i == 0) || (pooling_ == Pooling::Last && i == n - 1);
        b.add(tokens_[i], seq_, int32_t(i), want);
    }
    const std::vector<float> h = s_.decode(b, DecodeOutput::Hidden);
    const size_t E = sum_.size();
    if (pooling_ == Pooling::Mean) {
        // Token after token, so the sum does not depend on the chunking.
        for (size_t r = 0; r + E <= h.size(); r += E)
            for (size_t e = 0; e < E; ++e) sum_[e] += h[r + e];
    } else if (h.size() == E) {
        sum_ = h;
    }
    at_ = end;
    if (done() && pooling_ == Pooling::Mean) {
        const float count = float(n);
        for (float& x : sum_) x /= count;
    }
    return done();
}

std::vector<float> embed(Session& s, int seq, const std::vector<int32_t>& tokens, Pooling pooling, int normalize) {
    if (normalize < -1) throw std::invalid_argument("embedding normalization " + std::to_string(normalize) + " is not one of -1, 0, 1, 2 or p > 2");
    EmbedRun run(s, seq, tokens, pooling);
    while (!run.step(s.params().n_ubatch)) {
    }
    std::vector<float> v = run.pooled();
    embd_normalize(v, normalize);
    return v;
}

}  // namespace ls
