#include "core/runtime/session.h"

#include <algorithm>
#include <cstring>

#include "core/sched/remote_backend.h"
#include <stdexcept>
#include <string>

namespace ls {

namespace {
// What rank 0's sessions announce (Session::announce), each a list of int64: the command, then
// its arguments.
enum Cmd : int64_t { kOpen = 1, kDecode, kSeqRm, kSeqCp, kSeqKeep, kReset, kCheckpoint, kClose, kQuit, kDecodeHidden };

// The link of a model placed over ranks (one of its devices is another rank's), else null.
Transport* link_for(const Model& m) {
    for (Backend* b : m.backends())
        if (remote_rank(b) >= 0) {
            if (!process_transport()) throw std::logic_error("session: the model is placed over ranks, but this process has no link to them");
            return process_transport();
        }
    return nullptr;
}
}  // namespace

void Session::announce(std::vector<int64_t> cmd) {
    if (!lead_) return;
    std::vector<uint8_t> bytes(cmd.size() * sizeof(int64_t));
    std::memcpy(bytes.data(), cmd.data(), bytes.size());
    lead_->broadcast(bytes);
}

Session::Session(const Model& m, Backend& be, const SessionParams& p)
    : m_(m), be_(be), p_(p), sched_(m.backends(), m.shared_weights(), link_for(m), m.row_splits()), link_(link_for(m)) {
    if (p_.n_ctx < 1) throw std::invalid_argument("context size must be at least 1, got " + std::to_string(p_.n_ctx));
    if (p_.n_batch < 1) throw std::invalid_argument("batch size must be at least 1, got " + std::to_string(p_.n_batch));
    if (p_.n_ubatch < 1) throw std::invalid_argument("ubatch size must be at least 1, got " + std::to_string(p_.n_ubatch));
    if (p_.n_seq < 1) throw std::invalid_argument("number of sequences must be at least 1, got " + std::to_string(p_.n_seq));
    if (m.hparams().n_ctx_train > 0 && p_.n_ctx > m.hparams().n_ctx_train) p_.n_ctx = m.hparams().n_ctx_train;
    p_.n_ubatch = std::min({p_.n_ubatch, p_.n_batch, p_.n_ctx});
    KvCacheConfig kc{p_.n_ctx, p_.n_seq, p_.n_ubatch, p_.type_k, p_.type_v};
    kv_ = std::make_unique<KvCache>(m.layer_backends(), m.kv_layout(), kc);
    if (const auto rl = m.recurrent_layout(); !rl.empty()) rs_ = std::make_unique<RecurrentMemory>(m.layer_backends(), rl, p_.n_seq);
    cached_.resize(size_t(p_.n_seq));
    rope_top_.resize(size_t(p_.n_seq));
    for (auto& c : ckpt_pos_) c.assign(size_t(p_.n_seq), -1);
    if (link_ && link_->rank() == 0) {
        lead_ = link_;
        announce({kOpen, p.n_ctx, p.n_batch, p.n_ubatch, p.n_seq, int64_t(p.type_k), int64_t(p.type_v)});
    }
}

Session::~Session() {
    try {
        announce({kClose});
    } catch (...) {
        // The job is ending with an error already (a rank lost): nothing more to tell.
    }
}

void Session::release_ranks(Transport& link) {
    std::vector<uint8_t> bytes(sizeof(int64_t));
    const int64_t q = kQuit;
    std::memcpy(bytes.data(), &q, sizeof q);
    link.broadcast(bytes);
}

void Session::follow_rank0(const Model& m, Transport& link) {
    std::unique_ptr<Session> s;
    for (;;) {
        std::vector<uint8_t> bytes;
        link.broadcast(bytes);
        std::vector<int64_t> c(bytes.size() / sizeof(int64_t));
        std::memcpy(c.data(), bytes.data(), c.size() * sizeof(int64_t));
        if (c.empty()) throw std::runtime_error("rank " + std::to_string(link.rank()) + ": empty command from rank 0");
        auto need = [&](size_t n) {
            if (c.size() < n) throw std::runtime_error("rank " + std::to_string(link.rank()) + ": truncated command from rank 0");
        };
        auto session = [&]() -> Session& {
            if (!s) throw std::runtime_error("rank " + std::to_string(link.rank()) + ": a command for a session rank 0 never opened");
            return *s;
        };
        switch (c[0]) {
            case kQuit: return;
            case kOpen: {
                need(7);
                if (s) throw std::runtime_error("rank " + std::to_string(link.rank()) + ": rank 0 opened a second session (one per job under mpirun)");
                SessionParams p;
                p.n_ctx = c[1], p.n_batch = c[2], p.n_ubatch = c[3], p.n_seq = int32_t(c[4]);
                p.type_k = DType(c[5]), p.type_v = DType(c[6]);
                s = std::make_unique<Session>(m, p);
                break;
            }
            case kClose: s.reset(); break;
            // Rank 0 announces a batch only once it checked it, and an edit only once it made
            // it: any call that throws here means the ranks diverged, and ends the job.
            case kDecode: case kDecodeHidden: {
                need(2);
                const size_t n = size_t(c[1]);
                need(2 + 4 * n);
                Batch b;
                for (size_t i = 0; i < n; ++i)
                    b.add(int32_t(c[2 + i]), int32_t(c[2 + 2 * n + i]), int32_t(c[2 + n + i]), c[2 + 3 * n + i] != 0);
                session().decode(b, c[0] == kDecodeHidden ? DecodeOutput::Hidden : DecodeOutput::Logits);
                break;
            }
            case kSeqRm: case kSeqCp: case kSeqKeep: case kReset: case kCheckpoint: {
                need(c[0] == kSeqCp ? 4 : c[0] == kSeqRm || c[0] == kCheckpoint ? 3 : c[0] == kSeqKeep ? 2 : 1);
                Session& t = session();
                if (c[0] == kSeqRm) t.seq_rm(int(c[1]), c[2]);
                else if (c[0] == kSeqCp) t.seq_cp(int(c[1]), int(c[2]), c[3]);
                else if (c[0] == kSeqKeep) t.seq_keep(int(c[1]));
                else if (c[0] == kReset) t.reset();
                else t.save_checkpoint(int(c[1]), int(c[2]));
                break;
            }
            default: throw std::runtime_error("rank " + std::to_string(link.rank()) + ": unknown command " + std::to_string(c[0]) + " from rank 0");
        }
    }
}

void Session::check_batch(const Batch& b) const {
    const size_t n = b.tokens.size();
    if (b.pos.size() != n || b.seq.size() != n || b.logits.size() != n)
        throw std::invalid_argument("batch: tokens, positions, sequences and logit flags differ in length");
    const int64_t n_vocab = m_.hparams().n_vocab, E = m_.hparams().given_width();
    if ((!b.embd_idx.empty() && b.embd_idx.size() != n) || (!b.last_key.empty() && b.last_key.size() != n))
        throw std::invalid_argument("batch: the given rows' indices or the last keys differ in length from the tokens");
    if (b.embd.size() % size_t(E))
        throw std::invalid_argument("batch: given rows of " + std::to_string(E) + " values (the model's input width) expected, got " +
                                    std::to_string(b.embd.size()) + " values");
    const int64_t n_rows = int64_t(b.embd.size()) / E;
    if (!b.grid.empty() && b.grid.size() != 2 * n)
        throw std::invalid_argument("batch: the image grid places differ in length from the tokens (2 each)");
    if ((!b.embd_idx.empty() || !b.last_key.empty()) && !m_.takes_given_rows())
        throw std::invalid_argument(m_.hparams().arch + " takes no image (or other given) input rows");
    // The other ranks follow a batch from its tokens alone (follow_rank0): given rows and their
    // blocks would be cut and placed differently there.
    if ((!b.embd_idx.empty() || !b.last_key.empty()) && link_)
        throw std::invalid_argument("images (given input rows) are not supported yet for a model placed over ranks (mpirun)");
    std::vector<int64_t> next(size_t(p_.n_seq));
    for (int s = 0; s < p_.n_seq; ++s) next[size_t(s)] = kv_->seq_len(s);
    for (size_t i = 0; i < n; ++i) {
        const int32_t t = b.tokens[i], s = b.seq[i];
        const bool given = !b.embd_idx.empty() && b.embd_idx[i] >= 0;
        if (given && b.embd_idx[i] >= n_rows)
            throw std::out_of_range("batch token " + std::to_string(i) + " takes given row " + std::to_string(b.embd_idx[i]) + " of " +
                                    std::to_string(n_rows));
        if (!b.last_key.empty() && b.last_key[i] > b.pos[i]) {
            // The rest of its block follows it in this batch, in its sequence, position by position.
            const size_t j = i + size_t(b.last_key[i] - b.pos[i]);
            if (j >= n || b.seq[j] != s || b.pos[j] != b.last_key[i])
                throw std::invalid_argument("batch token " + std::to_string(i) + " sees up to position " + std::to_string(b.last_key[i]) +
                                            ", which is not the rest of its block in this batch");
        }
        if (given) {  // (its token id only names it in the sequence's history)
        } else if (t < 0 || t >= n_vocab)
            throw std::out_of_range("token id " + std::to_string(t) + " outside the vocabulary [0, " + std::to_string(n_vocab) + ")");
        if (s < 0 || s >= p_.n_seq)
            throw std::out_of_range("sequence " + std::to_string(s) + " outside [0, " + std::to_string(p_.n_seq) +
                                    ") (raise the number of sequences)");
        // Positions continue the sequence: the ring holds one contiguous span per sequence.
        if (b.pos[i] != next[size_t(s)])
            throw std::invalid_argument("batch token " + std::to_string(i) + " of sequence " + std::to_string(s) +
                                        " is at position " + std::to_string(b.pos[i]) + ", but the sequence continues at " +
                                        std::to_string(next[size_t(s)]));
        if (++next[size_t(s)] > p_.n_ctx)
            throw std::length_error("sequence " + std::to_string(s) + " would hold " + std::to_string(next[size_t(s)]) +
                                    " tokens, more than the context of " + std::to_string(p_.n_ctx) + " (raise -c)");
    }
}

std::vector<int64_t> Session::ubatch_cuts(const Batch& b) const {
    // At most n_ubatch tokens each, never inside a block of tokens that see each other (an
    // image): a cut that would fall in one moves back to the block's start.
    const int64_t n = int64_t(b.size());
    std::vector<int64_t> block_end(size_t(n), -1);  // per token: one past its block's last token, or -1
    if (!b.last_key.empty())
        for (int64_t i = 0; i < n; ++i)
            if (b.last_key[size_t(i)] > b.pos[size_t(i)]) {
                const int64_t e = i + (b.last_key[size_t(i)] - b.pos[size_t(i)]) + 1;
                for (int64_t j = i; j < e; ++j) block_end[size_t(j)] = std::max(block_end[size_t(j)], e);
            }
    std::vector<int64_t> cuts{0};
    while (cuts.back() < n) {
        const int64_t i0 = cuts.back();
        int64_t i1 = std::min(n, i0 + p_.n_ubatch);
        if (i1 < n) {
            int64_t s = i1;  // the first token of the block i1 - 1 and i1 share, if they do
            while (s > i0 && block_end[size_t(s - 1)] > i1) --s;
            if (s == i0)
                throw std::length_error("a block of " + std::to_string(block_end[size_t(i0)] - i0) +
                                        " tokens that see each other (an image) is larger than the ubatch of " +
                                        std::to_string(p_.n_ubatch) + " (raise -ub)");
            i1 = s;
        }
        cuts.push_back(i1);
    }
    return cuts;
}

std::vector<float> Session::decode(const Batch& b, DecodeOutput what) {
    check_batch(b);
    const Hparams& hp = m_.hparams();
    if (what == DecodeOutput::Logits && !hp.has_logits)
        throw std::invalid_argument(hp.arch + " is an embedding model: it gives embeddings, not logits (no text generation)");
    // A non-causal model's query sees keys after it, so a sequence must be evaluated whole in
    // one ubatch (core/rules/attention_rule.h, attn_last_keys): llama.cpp asks the same.
    if (!hp.causal) {
        if (int64_t(b.size()) > p_.n_ubatch)
            throw std::length_error("a batch of " + std::to_string(b.size()) + " tokens is larger than the ubatch of " +
                                    std::to_string(p_.n_ubatch) + ": " + hp.arch +
                                    " attends both ways and evaluates each input in one ubatch (raise -ub)");
        for (size_t i = 0; i < b.size(); ++i)
            if (kv_->seq_len(b.seq[i]) != 0)
                throw std::invalid_argument("sequence " + std::to_string(b.seq[i]) + " already holds tokens: " + hp.arch +
                                            " attends both ways and evaluates each input whole, in one ubatch");
    }
    if (lead_) {
        std::vector<int64_t> c{what == DecodeOutput::Hidden ? kDecodeHidden : kDecode, int64_t(b.size())};
        for (const auto* v : {&b.tokens, &b.pos, &b.seq}) c.insert(c.end(), v->begin(), v->end());
        c.insert(c.end(), b.logits.begin(), b.logits.end());
        announce(std::move(c));
    }
    const int64_t row = what == DecodeOutput::Hidden ? m_.hparams().n_embd : m_.hparams().n_vocab;
    std::vector<float> out;
    out.reserve(size_t(std::count_if(b.logits.begin(), b.logits.end(), [](uint8_t f) { return f != 0; })) * size_t(row));
    // Under mpirun, the other ranks run this batch with us from here: a failure now (a device out
    // of memory) would leave them waiting for rows, so it ends the job.
    Transport* link = link_;
    try {
    // Each ubatch's logits, read once they are here: at once from a device of this process; from
    // another rank (pipeline stages) after the next ubatch has been started, so that this rank
    // works on it while the later stages finish the one before.
    std::vector<std::unique_ptr<Graph>> graphs;  // alive until their logits are read
    std::vector<std::pair<Tensor*, size_t>> unread;  // logits, and where they go in `out`
    auto read_arrived = [&] {
        std::vector<std::pair<Tensor*, size_t>> later;
        for (auto& [t, at] : unread)
            if (t->buffer) read_output(*t, out.data() + at);
            else later.emplace_back(t, at);
        unread = std::move(later);
    };
    const std::vector<int64_t> cuts = ubatch_cuts(b);
    const int64_t A = m_.rope_axes();
    const std::vector<int32_t> rope_pos = A > 1 ? rope_positions(b) : std::vector<int32_t>{};
    for (size_t c = 0; c + 1 < cuts.size(); ++c) {
        const int64_t i0 = cuts[c], i1 = cuts[c + 1];
        Ubatch ub;
        ub.hidden = what == DecodeOutput::Hidden;
        ub.tokens.assign(b.tokens.begin() + i0, b.tokens.begin() + i1);
        ub.pos.assign(b.pos.begin() + i0, b.pos.begin() + i1);
        ub.seq.assign(b.seq.begin() + i0, b.seq.begin() + i1);
        if (!b.embd_idx.empty()) {
            const size_t E = size_t(m_.hparams().given_width());
            for (int64_t i = i0; i < i1; ++i)
                if (const int32_t r = b.embd_idx[size_t(i)]; r >= 0) {
                    ub.tokens[size_t(i - i0)] = 0;  // (its own row is written over by the given one)
                    ub.embd_at.push_back(int32_t(i - i0));
                    ub.embd.insert(ub.embd.end(), b.embd.begin() + ptrdiff_t(size_t(r) * E), b.embd.begin() + ptrdiff_t(size_t(r + 1) * E));
                }
        }
        if (!b.last_key.empty() && std::any_of(b.last_key.begin() + i0, b.last_key.begin() + i1, [](int32_t k) { return k >= 0; }))
            ub.last_key.assign(b.last_key.begin() + i0, b.last_key.begin() + i1);
        if (A > 1) ub.rope_pos.assign(rope_pos.begin() + i0 * A, rope_pos.begin() + i1 * A);
        for (int64_t i = i0; i < i1; ++i)
            if (b.logits[size_t(i)]) ub.out_idx.push_back(int32_t(i - i0));
        Graph& g = *graphs.emplace_back(std::make_unique<Graph>());
        Tensor* logits = m_.build_graph(g, ub, *kv_, rs_.get());
        sched_.run(g);
        for (int64_t i = i0; i < i1; ++i) {
            const int s = b.seq[size_t(i)];
            kv_->set_seq_len(s, kv_->seq_len(s) + 1);
            cached_[size_t(s)].push_back(b.tokens[size_t(i)]);
            if (A > 1) {
                const auto at = rope_pos.begin() + i * A;
                rope_top_[size_t(s)].push_back(*std::max_element(at, at + A));
            }
        }
        if (logits && sched_.outputs_here()) {
            unread.emplace_back(logits, out.size());
            out.resize(out.size() + size_t(logits->nelements()));
        }
        if (sched_.outputs_here()) {
            sched_.collect(1);  // the ubatches before this one
            read_arrived();
        }
    }
    if (sched_.outputs_here()) {
        sched_.collect(0);
        read_arrived();
    }
    } catch (const std::exception& e) {
        if (link) link->abort("lockstep: rank " + std::to_string(link->rank()) + " on " + link->host() + ": " + e.what());
        throw;
    }
    return out;
}

std::vector<int32_t> Session::rope_positions(const Batch& b) const {
    // HF's get_rope_index (Qwen2-VL and after): text continues from the largest position so
    // far plus one, on every axis; an image starting at p puts its token (y, x) at (p, p + y,
    // p + x), so the text after it starts at p + max(rows, columns).
    const int64_t A = m_.rope_axes();
    std::vector<int32_t> next(size_t(p_.n_seq)), start(size_t(p_.n_seq));
    for (size_t s = 0; s < next.size(); ++s) next[s] = start[s] = rope_top_[s].empty() ? 0 : rope_top_[s].back() + 1;
    std::vector<int32_t> out(b.size() * size_t(A));
    for (size_t i = 0; i < b.size(); ++i) {
        const size_t s = size_t(b.seq[i]);
        int32_t* o = out.data() + i * size_t(A);
        int32_t top = next[s];
        if (b.grid.empty() || b.grid[2 * i] < 0) {
            std::fill(o, o + A, next[s]);
        } else {
            const int32_t y = b.grid[2 * i], x = b.grid[2 * i + 1];
            if (y == 0 && x == 0) start[s] = next[s];
            const int32_t p = start[s];
            o[0] = p;
            for (int64_t a = 1; a < A; ++a) o[a] = p + (a == 1 ? y : a == 2 ? x : 0);
            top = p + std::max(y, x);
        }
        next[s] = top + 1;
    }
    return out;
}

std::vector<float> Session::eval(const std::vector<int32_t>& tokens, int64_t first_logit, int seq) {
    if (seq < 0 || seq >= p_.n_seq)
        throw std::out_of_range("sequence " + std::to_string(seq) + " outside [0, " + std::to_string(p_.n_seq) + ")");
    const int64_t n = int64_t(tokens.size()), start = kv_->seq_len(seq);
    if (start + n > p_.n_ctx)
        throw std::length_error("prompt of " + std::to_string(n) + " tokens after " + std::to_string(start) +
                                " cached ones exceeds the context of " + std::to_string(p_.n_ctx) + " tokens (raise -c)");
    if (first_logit < 0 || first_logit >= n) first_logit = n - 1;
    Batch b;
    for (int64_t i = 0; i < n; ++i) b.add(tokens[size_t(i)], seq, int32_t(start + i), i >= first_logit);
    return decode(b);
}

bool Session::seq_rm(int s, int64_t p0) {
    const bool ok = seq_rm_here(s, p0);
    announce({kSeqRm, s, p0});  // after: a call that throws here changes nothing anywhere
    return ok;
}

bool Session::seq_rm_here(int s, int64_t p0) {
    // Dropping everything is exact for the recurrent state too: a run at position 0 starts
    // from zeros (its reset flag), whatever the slot holds. Any other point inside the
    // sequence needs the state there: its checkpoint, if it was taken at exactly p0.
    int restore = -1;  // the checkpoint bank to restore
    if (rs_ && p0 > 0 && s >= 0 && s < p_.n_seq && p0 < kv_->seq_len(s)) {
        for (int b = 0; b < RecurrentMemory::kCheckpointBanks && restore < 0; ++b)
            if (ckpt_pos_[b][size_t(s)] == p0) restore = b;
        if (restore < 0 || !kv_->can_rm(s, p0)) return false;
    }
    if (!kv_->seq_rm(s, p0)) return false;
    if (restore >= 0) rs_->restore_checkpoint(s, restore);
    for (auto& c : ckpt_pos_)
        if (s >= 0 && s < p_.n_seq && p0 < c[size_t(s)]) c[size_t(s)] = -1;
    cached_[size_t(s)].resize(size_t(kv_->seq_len(s)));
    if (m_.rope_axes() > 1) rope_top_[size_t(s)].resize(size_t(kv_->seq_len(s)));
    return true;
}

bool Session::checkpoint(int s) { return save_checkpoint(s, 0); }
bool Session::checkpoint_step(int s) { return save_checkpoint(s, 1); }

bool Session::save_checkpoint(int s, int bank) {
    const bool ok = save_checkpoint_here(s, bank);
    announce({kCheckpoint, s, bank});
    return ok;
}

bool Session::save_checkpoint_here(int s, int bank) {
    if (s < 0 || s >= p_.n_seq)
        throw std::out_of_range("checkpoint: sequence " + std::to_string(s) + " outside [0, " + std::to_string(p_.n_seq) + ")");
    if (!rs_) return false;
    rs_->save_checkpoint(s, bank);
    ckpt_pos_[bank][size_t(s)] = kv_->seq_len(s);
    return true;
}

bool Session::seq_cp(int src, int dst, int64_t p1) {
    const bool ok = seq_cp_here(src, dst, p1);
    announce({kSeqCp, src, dst, p1});
    return ok;
}

bool Session::seq_cp_here(int src, int dst, int64_t p1) {
    if (rs_) {
        // The state of src describes all of its tokens: only a whole copy is possible.
        if (p1 >= 0 && src >= 0 && src < p_.n_seq && p1 < kv_->seq_len(src)) return false;
        if (!kv_->seq_cp(src, dst, p1)) return false;
        rs_->copy_slot(src, dst);
    } else if (!kv_->seq_cp(src, dst, p1)) return false;
    if (src != dst)
        for (auto& c : ckpt_pos_) c[size_t(dst)] = -1;
    std::vector<int32_t> t(cached_.at(size_t(src)).begin(), cached_.at(size_t(src)).begin() + kv_->seq_len(dst));
    cached_[size_t(dst)] = std::move(t);
    if (m_.rope_axes() > 1)
        rope_top_[size_t(dst)].assign(rope_top_.at(size_t(src)).begin(), rope_top_.at(size_t(src)).begin() + kv_->seq_len(dst));
    return true;
}

void Session::seq_keep(int s) {
    seq_keep_here(s);
    announce({kSeqKeep, s});
}

void Session::seq_keep_here(int s) {
    kv_->seq_keep(s);
    for (int i = 0; i < p_.n_seq; ++i)
        if (i != s) {
            cached_[size_t(i)].clear();
            rope_top_[size_t(i)].clear();
            for (auto& c : ckpt_pos_) c[size_t(i)] = -1;
        }
}

void Session::reset() {
    reset_here();
    announce({kReset});
}

void Session::reset_here() {
    kv_->clear();
    if (rs_) rs_->clear();
    for (auto& c : cached_) c.clear();
    for (auto& c : rope_top_) c.clear();
    for (auto& c : ckpt_pos_) std::fill(c.begin(), c.end(), int64_t(-1));
}

int64_t Session::reuse_prefix(int s, const std::vector<int32_t>& prompt) {
    const std::vector<int32_t>& have = cached_.at(size_t(s));
    // Compare the whole cached list, then keep one token back if the prompt is all cached:
    // its logits are needed.
    size_t common = 0;
    while (common < have.size() && common < prompt.size() && have[common] == prompt[common]) ++common;
    if (common > 0 && common == prompt.size()) --common;
    if (!seq_rm(s, int64_t(common))) {
        // Recurrent models keep one earlier point, their checkpoint; otherwise (or if the
        // ring no longer holds what that point needs) start over.
        const int64_t c = ckpt_pos_[0][size_t(s)];
        if (c > 0 && size_t(c) <= common && seq_rm(s, c)) {
            common = size_t(c);
        } else {
            seq_rm(s, 0);
            common = 0;
        }
    }
    return int64_t(common);
}

}  // namespace ls
