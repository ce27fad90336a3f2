// A model, a backend and KV memory: evaluates token sequences ubatch by ubatch.
#pragma once
#include <memory>
#include <vector>

#include "core/model.h"

namespace ls {

struct SessionParams {
    int64_t n_ctx = 4096;   // positions per sequence (clamped to the model's training context)
    int64_t n_batch = 2048; // tokens per decode call (logical batch)
    int64_t n_ubatch = 512; // tokens per graph run; the ring headroom B
    int32_t n_seq = 1;
    DType type_k = DType::F16, type_v = DType::F16;
};

class Session {
public:
    Session(const Model& m, Backend& be, const SessionParams& p);

    // Appends `tokens` to sequence `seq` at its current length. Returns the logits (n_vocab
    // each) of tokens[first_logit..], or of the last token only when first_logit < 0.
    // A prompt that would run past n_ctx is an error, raised before anything is evaluated.
    std::vector<float> eval(const std::vector<int32_t>& tokens, int64_t first_logit = -1, int seq = 0);

    KvCache& kv() { return *kv_; }
    const SessionParams& params() const { return p_; }
    const Model& model() const { return m_; }
    Backend& backend() { return be_; }
    int64_t n_vocab() const { return m_.hparams().n_vocab; }

private:
    const Model& m_;
    Backend& be_;
    SessionParams p_;
    std::unique_ptr<KvCache> kv_;
    std::unique_ptr<Buffer> scratch_;
};

}  // namespace ls
