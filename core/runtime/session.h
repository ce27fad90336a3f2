// A model, a backend and KV memory: evaluates batches of tokens of any sequences, ubatch by
// ubatch, and keeps each sequence's cached tokens for prefix reuse.
#pragma once
#include <memory>
#include <vector>

#include "core/models/model.h"
#include "core/sched/scheduler.h"

namespace ls {

struct SessionParams {
    int64_t n_ctx = 4096;   // positions per sequence (clamped to the model's training context)
    int64_t n_batch = 2048; // tokens per decode call (logical batch)
    int64_t n_ubatch = 512; // tokens per graph run; the ring headroom B
    int32_t n_seq = 1;      // sequence slots
    DType type_k = DType::F16, type_v = DType::F16;
};

// Tokens of any sequences, each with its position and whether its logits are wanted.
struct Batch {
    std::vector<int32_t> tokens, pos, seq;
    std::vector<uint8_t> logits;
    // Tokens whose input is a given row (an image's soft tokens): embd_idx[i] >= 0 is the row's
    // index in embd (n_embd floats each), -1 the token's own embedding; empty: none given.
    // last_key[i] > pos[i]: the token sees the keys up to that position of its sequence (the
    // rest of its image), which must be in this batch; empty or -1: causal. A block of tokens
    // that see each other is never cut between ubatches (one larger than the ubatch is refused).
    std::vector<int32_t> embd_idx, last_key;
    std::vector<float> embd;
    // Per token, when not empty: its row and column in its image's token grid (2 values; -1, -1
    // for text), which a model with multi-axis rope takes as its positions (Model::rope_axes);
    // an image's tokens come in grid order, its first one at (0, 0).
    std::vector<int32_t> grid;
    void add(int32_t token, int32_t seq_id, int32_t position, bool want_logits) {
        tokens.push_back(token);
        seq.push_back(seq_id);
        pos.push_back(position);
        logits.push_back(want_logits);
        if (!embd_idx.empty()) embd_idx.push_back(-1);
        if (!last_key.empty()) last_key.push_back(-1);
        if (!grid.empty()) grid.insert(grid.end(), {-1, -1});
    }
    // A token whose input is `row` (n_embd floats); `token` is what the sequence's history
    // records for it (prefix reuse compares those: give each image its own values).
    // (grid_y, grid_x): its place in its image's token grid.
    void add_row(const float* row, int64_t n_embd, int32_t token, int32_t seq_id, int32_t position, int32_t last, bool want_logits,
                 int32_t grid_y = 0, int32_t grid_x = 0) {
        embd_idx.resize(tokens.size(), -1);
        last_key.resize(tokens.size(), -1);
        grid.resize(2 * tokens.size(), -1);
        grid.insert(grid.end(), {grid_y, grid_x});
        embd_idx.push_back(int32_t(embd.size() / size_t(n_embd)));
        last_key.push_back(last);
        embd.insert(embd.end(), row, row + n_embd);
        tokens.push_back(token);
        seq.push_back(seq_id);
        pos.push_back(position);
        logits.push_back(want_logits);
    }
    size_t size() const { return tokens.size(); }
    void clear() { tokens.clear(), pos.clear(), seq.clear(), logits.clear(), embd_idx.clear(), last_key.clear(), embd.clear(), grid.clear(); }
};

// What Session::decode returns for each flagged token.
enum class DecodeOutput {
    Logits,  // n_vocab floats
    Hidden,  // n_embd floats: the final normalized hidden state (embeddings)
};

class Session {
public:
    // Throws std::invalid_argument naming the bad value (a context or ubatch below 1, a
    // cache type the model's rows cannot be stored in, ...). Each layer's KV rows and state
    // live where the model placed the layer (Model::layer_backends); graphs run over the
    // model's backends (Scheduler). `be` is the model's backend when it has one.
    Session(const Model& m, Backend& be, const SessionParams& p);
    explicit Session(const Model& m, const SessionParams& p) : Session(m, *m.backends().at(0), p) {}
    // Under mpirun (a model placed over ranks, process_transport()): rank 0's session sends
    // every call that changes state (decode, the sequence edits) to the other ranks first, so
    // that their sessions over their stages follow it call for call; they run follow_rank0.
    ~Session();
    Session(const Session&) = delete;
    Session& operator=(const Session&) = delete;
    // Ranks other than 0: mirror rank 0's sessions over model `m` until rank 0 ends the job
    // (release_ranks). Returns then.
    static void follow_rank0(const Model& m, Transport& link);
    // Rank 0, at the end of the job: the other ranks return from follow_rank0.
    static void release_ranks(Transport& link);

    // Evaluates a batch: each sequence's tokens must continue it, at positions seq_len(s),
    // seq_len(s)+1, ... in batch order. Everything is checked before anything is evaluated;
    // then the batch runs in ubatches of at most n_ubatch tokens, sequences mixed. Returns
    // the logits (n_vocab each) of the tokens flagged for logits, in batch order; with
    // DecodeOutput::Hidden their final normalized hidden states (n_embd each) instead. Either
    // output of a token is the same bits whatever else shares its ubatch.
    std::vector<float> decode(const Batch& b, DecodeOutput what = DecodeOutput::Logits);

    // Appends `tokens` to sequence `seq`. Returns the logits of tokens[first_logit..], or of
    // the last token only when first_logit < 0. A prompt that would run past n_ctx is an
    // error, raised before anything is evaluated.
    std::vector<float> eval(const std::vector<int32_t>& tokens, int64_t first_logit = -1, int seq = 0);

    // Sequence edits (SEMANTICS.md section 1); the cached token lists follow. On a model with
    // recurrent layers seq_rm(s, p0) returns false (changing nothing) unless 0 == p0,
    // p0 >= seq_len(s) or p0 is the sequence's checkpoint (checkpoint()), and seq_cp copies
    // the whole sequence only (p1 < 0 or p1 = seq_len).
    int64_t seq_len(int s) const { return kv_->seq_len(s); }
    const std::vector<int32_t>& seq_tokens(int s) const { return cached_.at(size_t(s)); }
    bool seq_rm(int s, int64_t p0);
    bool seq_cp(int src, int dst, int64_t p1 = -1);
    // Models with recurrent layers: remembers sequence s's state at its current length (one
    // checkpoint per sequence, replacing the last), so that a later seq_rm(s, p0) to exactly
    // that point succeeds (generate() sets one after each prompt: the next chat turn resumes
    // from there instead of evaluating the whole transcript again). A seq_rm below the point,
    // seq_cp into s, seq_keep of another sequence and reset() drop it. Returns false (and does
    // nothing) for models without recurrent layers, which need none.
    bool checkpoint(int s);
    // The position of sequence s's checkpoint, or -1.
    int64_t checkpoint_pos(int s) const { return ckpt_pos_[0].at(size_t(s)); }
    // A second checkpoint per sequence, for speculative decoding: taken before a verification
    // step so that rejected guesses can be rolled back (seq_rm to exactly this point, then the
    // accepted tokens evaluated again), without replacing the checkpoint above, which the next
    // chat turn resumes from. The same rules otherwise; false for models without recurrent layers.
    bool checkpoint_step(int s);
    int64_t checkpoint_step_pos(int s) const { return ckpt_pos_[1].at(size_t(s)); }
    void seq_keep(int s);
    // Empties every sequence (one buffer fill of the KV memory).
    void reset();

    // One sequence's memory as bytes (seq_state.cpp): its tokens, the KV rows its rings hold
    // and its recurrent state, after a header naming the model (a hash of the GGUF's metadata
    // and tensor table, and the file's size) and the cache's types and row sizes. load_seq
    // checks all of it before changing anything, then makes sequence s hold exactly what was
    // saved: the same logits follow, in a session of the same model whose context holds the
    // tokens and whose cache types match (the context and ubatch may differ; a windowed ring
    // smaller than when saved keeps its last rows). The recurrent checkpoints are not saved:
    // after a load, a hybrid model's sequence can be cut back to 0 only. Throws
    // std::invalid_argument naming the mismatch (another model, other cache types, a truncated
    // or damaged state), std::length_error for a sequence longer than this context.
    std::vector<uint8_t> save_seq(int s) const;
    size_t seq_state_bytes(int s) const;  // what save_seq(s) returns, without making it
    void load_seq(int s, const uint8_t* data, size_t n);

    // Prepares sequence s for `prompt`: keeps the longest prefix of it that is cached and
    // that seq_rm can keep (always leaving at least one token to evaluate, for its logits),
    // else empties the sequence. Returns how many tokens of `prompt` are kept; the caller
    // evaluates prompt[kept..].
    int64_t reuse_prefix(int s, const std::vector<int32_t>& prompt);

    const KvCache& kv() const { return *kv_; }
    const SessionParams& params() const { return p_; }
    const Model& model() const { return m_; }
    Backend& backend() { return be_; }
    // The pieces and bytes moved by the last graph run (more than one piece: a split model).
    const Scheduler::Stats& last_run() const { return sched_.last_run(); }
    int64_t n_vocab() const { return m_.hparams().n_vocab; }
    int64_t n_embd() const { return m_.hparams().n_embd; }

private:
    const Model& m_;
    Backend& be_;
    SessionParams p_;
    std::unique_ptr<KvCache> kv_;
    // Hybrid models: conv and scan state per sequence slot (null for attention-only models).
    // A recurrent state holds no positions, so seq_rm cannot drop the tail of a sequence: it
    // succeeds only when it removes nothing or everything (SEMANTICS.md section 2).
    std::unique_ptr<RecurrentMemory> rs_;
    Scheduler sched_;
    std::vector<std::vector<int32_t>> cached_;  // per sequence: the tokens its KV rows hold
    // Models with multi-axis rope: per sequence, per cached token, the largest of its rope
    // positions (the next text token takes the last one plus one).
    std::vector<std::vector<int32_t>> rope_top_;
    // Each token's rope positions ([n][axes]) for a checked batch, continuing each sequence.
    std::vector<int32_t> rope_positions(const Batch& b) const;
    // Per checkpoint bank (0: checkpoint(), 1: checkpoint_step()), per sequence: the length
    // at which its recurrent state was saved, or -1.
    std::vector<int64_t> ckpt_pos_[RecurrentMemory::kCheckpointBanks];
    bool save_checkpoint(int s, int bank);

    void check_batch(const Batch& b) const;
    // Where decode cuts a batch into ubatches (its first index 0, its last b.size()).
    std::vector<int64_t> ubatch_cuts(const Batch& b) const;
    Transport* link_ = nullptr;  // the other ranks' link (a model placed over ranks), else null
    Transport* lead_ = nullptr;  // rank 0 of several: where state-changing calls are announced
    void announce(std::vector<int64_t> cmd);
    // The edits themselves; the public calls add the announcement.
    bool seq_rm_here(int s, int64_t p0);
    bool seq_cp_here(int src, int dst, int64_t p1);
    void seq_keep_here(int s);
    void reset_here();
    bool save_checkpoint_here(int s, int bank);
};

}  // namespace ls
