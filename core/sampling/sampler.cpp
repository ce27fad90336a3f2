#include "core/sampling/sampler.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <stdexcept>

namespace ls {

Sampler::Sampler(SamplerParams p, std::unique_ptr<SamplerStage> constraint) : p_(std::move(p)) {
    if (!p_.logit_bias.empty()) chain_.push_back(make_logit_bias(p_.logit_bias));
    if (p_.repeat_penalty != 1.0f || p_.frequency_penalty != 0.0f || p_.presence_penalty != 0.0f)
        chain_.push_back(make_penalties(p_.repeat_penalty, p_.frequency_penalty, p_.presence_penalty, p_.repeat_last_n));
    if (p_.grammar) {
        if (!p_.grammar_vocab) throw std::invalid_argument("sampler: a grammar needs the vocabulary's token texts (grammar_vocab)");
        chain_.push_back(make_grammar(p_.grammar, p_.grammar_vocab, p_.top_k, p_.temp <= 0.0f));
    }
    if (constraint) chain_.push_back(std::move(constraint));
    if (p_.temp <= 0.0f) {
        chain_.push_back(make_greedy());
        return;
    }
    chain_.push_back(make_top_k(p_.top_k));
    chain_.push_back(make_temperature(p_.temp));
    if (p_.top_p < 1.0f) chain_.push_back(make_top_p(p_.top_p));
    if (p_.min_p > 0.0f) chain_.push_back(make_min_p(p_.min_p));
    chain_.push_back(make_draw(p_.seed, p_.stream));
}

int32_t Sampler::sample(float* logits, int n, const int32_t* history, size_t n_history, int64_t pos) {
    if (n <= 0) throw std::invalid_argument("sample: n_vocab must be positive");
    if (p_.want_logprobs) orig_.assign(logits, logits + n);
    c_.logits = logits;
    c_.n_vocab = n;
    c_.history = history;
    c_.n_history = n_history;
    c_.pos = pos;
    c_.formed = false;
    c_.chosen = -1;
    for (auto& s : chain_) s->apply(c_);
    const int32_t chosen = c_.chosen;
    for (auto& s : chain_) s->accept(chosen);
    if (p_.want_logprobs) logprobs(n, chosen);
    return chosen;
}

void Sampler::logprobs(int n, int32_t chosen) {
    const float mx = *std::max_element(orig_.begin(), orig_.end());
    double s = 0;
    for (float l : orig_) s += std::exp(double(l) - mx);
    const double lse = mx + std::log(s);
    last_logprob_ = float(orig_[size_t(chosen)] - lse);
    last_top_.clear();
    const size_t nt = size_t(std::clamp(p_.n_logprobs, 0, n));
    if (nt == 0) return;
    std::vector<int32_t> ids(static_cast<size_t>(n));
    std::iota(ids.begin(), ids.end(), 0);
    auto better = [this](int32_t a, int32_t b) {
        return orig_[size_t(a)] > orig_[size_t(b)] || (orig_[size_t(a)] == orig_[size_t(b)] && a < b);
    };
    std::nth_element(ids.begin(), ids.begin() + std::ptrdiff_t(nt - 1), ids.end(), better);
    std::sort(ids.begin(), ids.begin() + std::ptrdiff_t(nt), better);
    for (size_t i = 0; i < nt; ++i) last_top_.push_back({ids[i], float(orig_[size_t(ids[i])] - lse)});
}

}  // namespace ls
