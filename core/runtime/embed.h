// Embeddings: a sequence's final normalized hidden states (Session's DecodeOutput::Hidden)
// pooled into one vector, as llama.cpp defines pooling, then normalized as its
// --embd-normalize does.
//
// Pooling happens on the host over hidden states read in token order, one token after the
// other, so a vector is the same bits however its tokens were split into decode calls (and,
// as the states themselves are, whatever else the backend evaluated beside them). A model's
// projection of the pooled vector (Model::embd_projection(), EmbeddingGemma's dense layers)
// runs there too, in EmbedRun, so embed(), embed_many() and the server apply it once.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "core/runtime/session.h"

namespace ls {

// llama.cpp's enum llama_pooling_type (GGUF key <arch>.pooling_type), same numbers.
enum class Pooling : int32_t {
    None = 0,  // one vector per token: no sequence embedding (refused by embed())
    Mean = 1,  // the mean of every token's state
    Cls = 2,   // the first token's
    Last = 3,  // the last token's (Qwen3-Embedding)
    Rank = 4,  // a reranker: its classifier head's scores (Model::rank_head), from the CLS or last token
};

// "none", "mean", "cls", "last", "rank".
const char* pooling_name(Pooling p);
// The inverse (also "0".."4"); throws std::invalid_argument naming the accepted words.
Pooling parse_pooling(const std::string& s);
// What the file says (<arch>.pooling_type); Pooling::None for a file without the key, as
// llama.cpp's default for a decoder. Throws std::runtime_error for a value outside 0..4.
Pooling model_pooling(const Model& m);
Pooling model_pooling(const GgufFile& f, const std::string& arch);

// llama.cpp's common_embd_normalize, in place: -1 none, 0 max-abs scaled to the int16 range
// (32760 / max|x|), 1 taxicab, 2 euclidean (the default), p > 2 the p-norm. A zero vector stays
// zero. Throws std::invalid_argument for norm < -1.
void embd_normalize(std::vector<float>& v, int norm);
// The first n values, normalized again with `norm` (Matryoshka truncation, OpenAI's
// `dimensions`); n must be in [1, v.size()].
std::vector<float> embd_truncate(const std::vector<float>& pooled, int64_t n, int norm);

// One sequence's embedding, computed a bounded chunk at a time, alone (step) or with other
// runs in one batch (add_to, then take): the server's engine runs chunks of every embeddings
// job between generation steps. The sequence slot is emptied first; it holds the text
// afterwards (its rows may be reused as a prefix by a later request).
class EmbedRun {
public:
    // Throws std::invalid_argument for Pooling::None or Rank without a rank head, std::length_error for an empty
    // input or one longer than the context (or, for a non-causal model, than the ubatch), std::out_of_range for a token outside the
    // vocabulary: all before anything is evaluated.
    EmbedRun(Session& s, int seq, std::vector<int32_t> tokens, Pooling pooling);
    // Appends up to max_tokens of the tokens still to evaluate to `b` (max_tokens <= 0: all;
    // a non-causal model's input whole or, where it does not fit, nothing this time),
    // flagging those whose states the pooling needs. Returns the number of flagged tokens: the
    // rows of the decode's output (DecodeOutput::Hidden) that take() reads, in batch order.
    // Empties the sequence before its first chunk.
    size_t add_to(Batch& b, int64_t max_tokens);
    // After the decode of the batch: the rows for the flagged tokens of the last add_to.
    void take(const float* rows, size_t n_rows);
    // add_to, decode, take: one Session::decode call. Returns true once every token is evaluated.
    bool step(int64_t max_tokens);
    bool done() const { return at_ == tokens_.size(); }
    // The pooled vector, through the model's embd_projection() if it has one (not
    // normalized); valid once done().
    const std::vector<float>& pooled() const { return sum_; }
    size_t n_tokens() const { return tokens_.size(); }
    int seq() const { return seq_; }

private:
    Session& s_;
    int seq_;
    std::vector<int32_t> tokens_;
    Pooling pooling_;
    size_t at_ = 0, added_ = 0;  // evaluated; in the batch being evaluated
    bool first_ = false;         // pools the first token's state (CLS, and rank but for Qwen3); else the last's
    std::vector<float> sum_;  // n_embd (the projection, if any, maps n_embd to n_embd)
};

// The whole of it: evaluates `tokens` in sequence `seq` in chunks of the session's ubatch,
// pools and normalizes (Pooling::Rank: the head's scores, not normalized).
std::vector<float> embed(Session& s, int seq, const std::vector<int32_t>& tokens, Pooling pooling, int normalize = 2);

// Several inputs at once over the sequence slots `seqs`: each input runs in one slot, up to
// seqs.size() of them side by side in each decode call of at most the session's ubatch tokens
// (a freed slot takes the next input). Each vector is the same bits as embed() gives it alone.
std::vector<std::vector<float>> embed_many(Session& s, const std::vector<int>& seqs, const std::vector<std::vector<int32_t>>& inputs,
                                           Pooling pooling, int normalize = 2);

}  // namespace ls
