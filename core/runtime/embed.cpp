#include "core/runtime/embed.h"

#include "core/models/arch_keys.h"

#include <algorithm>
#include <cmath>
#include <memory>
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

Pooling model_pooling(const Model& m) { return model_pooling(m.gguf(), m.hparams().arch); }

Pooling model_pooling(const GgufFile& f, const std::string& arch) {
    const ArchKeys keys(f, arch);
    const int64_t v = keys.get_int(ArchKey::PoolingType, 0);
    if (v < 0 || v > 4) throw std::runtime_error(keys.name(ArchKey::PoolingType) + " is " + std::to_string(v) + ", not a pooling type (0..4)");
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
    if (pooling_ == Pooling::Rank && !s.model().rank_head())
        throw std::invalid_argument("rank pooling needs a reranker's classifier head (cls.output.weight), which this model does not have");
    if (seq < 0 || seq >= s.params().n_seq)
        throw std::out_of_range("sequence " + std::to_string(seq) + " outside [0, " + std::to_string(s.params().n_seq) + ")");
    if (tokens_.empty()) throw std::length_error("the input is empty");
    if (int64_t(tokens_.size()) > s.params().n_ctx)
        throw std::length_error("the input has " + std::to_string(tokens_.size()) + " tokens, more than the context of " +
                                std::to_string(s.params().n_ctx) + " (raise -c)");
    // An encoder attends both ways: an input is evaluated whole, in one ubatch (Session::decode).
    if (!s.model().hparams().causal && int64_t(tokens_.size()) > s.params().n_ubatch)
        throw std::length_error("the input has " + std::to_string(tokens_.size()) + " tokens, more than the ubatch of " +
                                std::to_string(s.params().n_ubatch) + "; " + s.model().hparams().arch +
                                " attends both ways and evaluates an input in one ubatch (raise -ub)");
    const int64_t n_vocab = s.n_vocab();
    for (int32_t t : tokens_)
        if (t < 0 || t >= n_vocab)
            throw std::out_of_range("token id " + std::to_string(t) + " outside the vocabulary [0, " + std::to_string(n_vocab) + ")");
    sum_.assign(size_t(s.n_embd()), 0.0f);
    first_ = pooling_ == Pooling::Cls || (pooling_ == Pooling::Rank && !s.model().rank_head()->last_token);
}

size_t EmbedRun::add_to(Batch& b, int64_t max_tokens) {
    if (done()) return 0;
    // The sequence starts over at the first chunk (attention sees only this input).
    if (at_ == 0 && !s_.seq_rm(seq_, 0)) throw std::runtime_error("embedding: sequence " + std::to_string(seq_) + " could not be emptied");
    if (s_.seq_len(seq_) != int64_t(at_))
        throw std::runtime_error("embedding: sequence " + std::to_string(seq_) + " was changed while it was evaluated");
    const size_t n = tokens_.size();
    size_t end = max_tokens <= 0 ? n : std::min(n, at_ + size_t(max_tokens));
    // An encoder's input goes whole or waits for a batch with room for it.
    if (!s_.model().hparams().causal && end < n) end = at_;
    size_t flagged = 0;
    for (size_t i = at_; i < end; ++i) {
        const bool want = pooling_ == Pooling::Mean || (first_ && i == 0) || (!first_ && pooling_ != Pooling::Mean && i == n - 1);
        b.add(tokens_[i], seq_, int32_t(i), want);
        flagged += want;
    }
    added_ = end - at_;
    return flagged;
}

void EmbedRun::take(const float* rows, size_t n_rows) {
    if (done()) return;  // its vector is final (divided and projected once)
    const size_t E = sum_.size();
    if (pooling_ == Pooling::Mean) {
        // Token after token, so the sum does not depend on the chunking.
        for (size_t r = 0; r < n_rows; ++r)
            for (size_t e = 0; e < E; ++e) sum_[e] += rows[r * E + e];
    } else if (n_rows == 1) {
        sum_.assign(rows, rows + E);
    }
    at_ += added_;
    added_ = 0;
    if (done() && pooling_ == Pooling::Mean) {
        const float count = float(tokens_.size());
        for (float& x : sum_) x /= count;
    }
    // The model's projection of the pooled vector (EmbeddingGemma's dense layers), here once
    // for every caller, on the host in a fixed order: before any normalization, as llama.cpp.
    if (done())
        for (const HostLinear& l : s_.model().embd_projection()) sum_ = l.apply(sum_);
    // A reranker's head turns the pooled state into its scores (llama.cpp: no projection then).
    if (done() && pooling_ == Pooling::Rank) sum_ = s_.model().rank_head()->apply(sum_);
}

bool EmbedRun::step(int64_t max_tokens) {
    if (done()) return true;
    Batch b;
    const size_t rows = add_to(b, max_tokens);
    const std::vector<float> h = s_.decode(b, DecodeOutput::Hidden);
    if (h.size() != rows * sum_.size()) throw std::logic_error("embedding: the decode returned " + std::to_string(h.size()) + " values");
    take(h.data(), rows);
    return done();
}

std::vector<float> embed(Session& s, int seq, const std::vector<int32_t>& tokens, Pooling pooling, int normalize) {
    if (normalize < -1) throw std::invalid_argument("embedding normalization " + std::to_string(normalize) + " is not one of -1, 0, 1, 2 or p > 2");
    EmbedRun run(s, seq, tokens, pooling);
    while (!run.step(s.params().n_ubatch)) {
    }
    std::vector<float> v = run.pooled();
    if (pooling != Pooling::Rank) embd_normalize(v, normalize);  // (a reranker's scores are not a vector to normalize)
    return v;
}

std::vector<std::vector<float>> embed_many(Session& s, const std::vector<int>& seqs, const std::vector<std::vector<int32_t>>& inputs,
                                           Pooling pooling, int normalize) {
    if (normalize < -1) throw std::invalid_argument("embedding normalization " + std::to_string(normalize) + " is not one of -1, 0, 1, 2 or p > 2");
    if (seqs.empty()) throw std::invalid_argument("embed_many: no sequence slots");
    // Every input checked before anything is evaluated.
    for (const auto& in : inputs) EmbedRun(s, seqs[0], in, pooling);
    std::vector<std::vector<float>> out(inputs.size());
    std::vector<std::unique_ptr<EmbedRun>> running;  // oldest first
    std::vector<size_t> which;                       // the input each runs
    size_t next = 0;
    const int64_t ub = s.params().n_ubatch;
    while (next < inputs.size() || !running.empty()) {
        for (int q : seqs) {
            if (next == inputs.size()) break;
            bool busy = false;
            for (const auto& r : running) busy |= r->seq() == q;
            if (busy) continue;
            running.push_back(std::make_unique<EmbedRun>(s, q, inputs[next], pooling));
            which.push_back(next++);
        }
        // One batch: the oldest runs' next tokens, up to a ubatch.
        Batch b;
        std::vector<size_t> rows;
        for (auto& r : running) {
            const int64_t room = ub - int64_t(b.size());
            rows.push_back(room > 0 ? r->add_to(b, room) : 0);
        }
        const std::vector<float> h = s.decode(b, DecodeOutput::Hidden);
        const size_t E = size_t(s.n_embd());
        size_t at = 0;
        for (size_t k = 0; k < running.size(); ++k) {
            running[k]->take(h.data() + at * E, rows[k]);
            at += rows[k];
        }
        for (size_t k = running.size(); k-- > 0;)
            if (running[k]->done()) {
                out[which[k]] = running[k]->pooled();
                if (pooling != Pooling::Rank) embd_normalize(out[which[k]], normalize);
                running.erase(running.begin() + int64_t(k));
                which.erase(which.begin() + int64_t(k));
            }
    }
    return out;
}

}  // namespace ls
