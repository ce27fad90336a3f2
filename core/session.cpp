#include "core/session.h"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace ls {

Session::Session(const Model& m, Backend& be, const SessionParams& p) : m_(m), be_(be), p_(p) {
    if (p_.n_ctx <= 0) throw std::invalid_argument("context size must be positive");
    if (m.hparams().n_ctx_train > 0 && p_.n_ctx > m.hparams().n_ctx_train) p_.n_ctx = m.hparams().n_ctx_train;
    if (p_.n_ubatch <= 0 || p_.n_batch <= 0) throw std::invalid_argument("batch sizes must be positive");
    p_.n_ubatch = std::min({p_.n_ubatch, p_.n_batch, p_.n_ctx});
    KvCacheConfig kc{p_.n_ctx, p_.n_seq, p_.n_ubatch, p_.type_k, p_.type_v};
    kv_ = std::make_unique<KvCache>(be, m.kv_layout(), kc);
}

std::vector<float> Session::eval(const std::vector<int32_t>& tokens, int64_t first_logit, int seq) {
    if (seq < 0 || seq >= p_.n_seq) throw std::out_of_range("sequence " + std::to_string(seq) + " outside [0, " + std::to_string(p_.n_seq) + ")");
    const int64_t n_vocab = m_.hparams().n_vocab;
    for (int32_t t : tokens)
        if (t < 0 || t >= n_vocab)
            throw std::out_of_range("token id " + std::to_string(t) + " outside the vocabulary [0, " + std::to_string(n_vocab) + ")");
    const int64_t start = kv_->seq_len(seq);
    const int64_t n = int64_t(tokens.size());
    if (start + n > p_.n_ctx)
        throw std::length_error("prompt of " + std::to_string(n) + " tokens after " + std::to_string(start) +
                                " cached ones exceeds the context of " + std::to_string(p_.n_ctx) + " tokens");
    std::vector<float> out;
    if (first_logit < 0 || first_logit >= n) first_logit = n - 1;
    out.reserve(size_t((n - first_logit) * n_vocab));
    for (int64_t i0 = 0; i0 < n; i0 += p_.n_ubatch) {
        const int64_t i1 = std::min(n, i0 + p_.n_ubatch);
        Ubatch ub;
        for (int64_t i = i0; i < i1; ++i) {
            ub.tokens.push_back(tokens[i]);
            ub.pos.push_back(int32_t(start + i));
            ub.seq.push_back(seq);
            if (i >= first_logit) ub.out_idx.push_back(int32_t(i - i0));
        }
        Graph g;
        Tensor* logits = m_.build_graph(g, ub, *kv_);
        run_graph(be_, g, scratch_);
        kv_->set_seq_len(seq, start + i1);
        if (logits) {
            size_t at = out.size();
            out.resize(at + size_t(logits->nelements()));
            read_tensor(be_, *logits, out.data() + at);
        }
    }
    return out;
}

}  // namespace ls
