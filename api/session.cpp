// Sessions: decoding batches, their outputs, the sequence edits, embeddings and a sequence's state.
#include <cstring>
#include <fstream>
#include <cerrno>
#include <iterator>
#include <tuple>

#include "api/handles.h"
#include "core/runtime/embed.h"

namespace ls::capi {
namespace {

lockstep_session& session(lockstep_session* s) { return *need(s, "session"); }
const lockstep_session& session(const lockstep_session* s) { return *need(s, "session"); }

void check_seq(const lockstep_session& h, int32_t seq) {
    const int32_t n = h.s->params().n_seq;
    if (seq < 0 || seq >= n)
        throw Error(LOCKSTEP_ERR_OUT_OF_RANGE, "sequence " + std::to_string(seq) + " outside [0, " + std::to_string(n) + ")");
}

// The caller's batch as the Session takes it; positions and sequences filled in where NULL.
// Ranges (tokens, sequences, positions, the context) are Session::decode's to check.
Batch to_batch(const lockstep_session& h, const lockstep_batch* b) {
    need(b, "batch");
    if (b->n_tokens < 1) throw Error(LOCKSTEP_ERR_INVALID_ARGUMENT, "the batch has " + std::to_string(b->n_tokens) + " tokens");
    need(b->tokens, "batch->tokens");
    const int64_t n_batch = h.s->params().n_batch;
    if (b->n_tokens > n_batch)
        throw Error(LOCKSTEP_ERR_TOO_LONG, "a batch of " + std::to_string(b->n_tokens) + " tokens is more than the session's n_batch of " +
                                               std::to_string(n_batch));
    const int32_t n_seq = h.s->params().n_seq;
    std::vector<int64_t> next(static_cast<size_t>(n_seq), 0);
    for (int32_t s = 0; s < n_seq; ++s) next[size_t(s)] = h.s->seq_len(s);
    Batch out;
    for (int32_t i = 0; i < b->n_tokens; ++i) {
        const int32_t seq = b->seq_id ? b->seq_id[i] : 0;
        int32_t pos = 0;
        if (b->pos) pos = b->pos[i];
        else if (seq >= 0 && seq < n_seq) pos = int32_t(next[size_t(seq)]++);
        const bool want = b->logits ? b->logits[i] != 0 : i + 1 == b->n_tokens;
        out.add(b->tokens[i], seq, pos, want);
    }
    return out;
}

int do_decode(const char* fn, lockstep_session* sp, const lockstep_batch* batch, DecodeOutput what) {
    return guarded(fn, [&] {
        lockstep_session& h = session(sp);
        const Batch b = to_batch(h, batch);
        h.rows = 0;  // (the outputs of a failed decode are none)
        h.out = h.s->decode(b, what);
        h.hidden = what == DecodeOutput::Hidden;
        h.row_len = h.hidden ? h.s->n_embd() : h.s->n_vocab();
        h.rows = int32_t(h.out.size() / size_t(h.row_len));
    });
}

}  // namespace

const float* output_row(lockstep_session& h, int32_t i, bool hidden) {
    if (h.rows > 0 && h.hidden != hidden)
        throw Error(LOCKSTEP_ERR_INVALID_ARGUMENT, hidden ? "the last decode gave logits (lockstep_decode): use lockstep_get_logits"
                                                          : "the last decode gave hidden states (lockstep_decode_hidden): use lockstep_get_hidden");
    const int32_t r = i < 0 ? h.rows + i : i;
    if (r < 0 || r >= h.rows)
        throw Error(LOCKSTEP_ERR_OUT_OF_RANGE, "output row " + std::to_string(i) + " outside the last decode's " + std::to_string(h.rows) + " rows");
    return h.out.data() + size_t(r) * size_t(h.row_len);
}

namespace {

void check_edit(bool ok, const std::string& what) {
    if (!ok) throw Error(LOCKSTEP_ERR_UNSUPPORTED, what);
}

// Session::load_seq's refusals of the bytes themselves are a format error here.
void load_state(lockstep_session& h, int32_t seq, const uint8_t* data, size_t n) {
    check_seq(h, seq);
    try {
        h.s->load_seq(seq, data, n);
    } catch (const std::invalid_argument& e) {
        throw Error(LOCKSTEP_ERR_FORMAT, e.what());
    }
}

}  // namespace
}  // namespace ls::capi

using namespace ls;
using namespace ls::capi;

extern "C" {

LOCKSTEP_API lockstep_session_params lockstep_session_default_params(void) {
    const SessionParams d;
    lockstep_session_params p;
    std::memset(&p, 0, sizeof p);
    p.n_ctx = d.n_ctx;
    p.n_batch = d.n_batch;
    p.n_ubatch = d.n_ubatch;
    p.n_seq = d.n_seq;
    p.type_k = int32_t(d.type_k);
    p.type_v = int32_t(d.type_v);
    return p;
}

LOCKSTEP_API int lockstep_session_new(lockstep_model* model, const lockstep_session_params* params, lockstep_session** session) {
    return guarded("lockstep_session_new", [&] {
        need(session, "session");
        *session = nullptr;
        const auto& m = need(model, "model")->m;
        const lockstep_session_params p = params ? *params : lockstep_session_default_params();
        SessionParams sp;
        if (p.n_ctx < 0) throw Error(LOCKSTEP_ERR_INVALID_ARGUMENT, "n_ctx must be >= 0 (0: the model's), got " + std::to_string(p.n_ctx));
        sp.n_ctx = p.n_ctx > 0 ? p.n_ctx : m->hp().n_ctx_train > 0 ? m->hp().n_ctx_train : sp.n_ctx;
        sp.n_batch = p.n_batch;
        sp.n_ubatch = p.n_ubatch;
        sp.n_seq = p.n_seq;
        for (auto [t, what, dst] : {std::tuple{p.type_k, "type_k", &sp.type_k}, std::tuple{p.type_v, "type_v", &sp.type_v}}) {
            if (t != LOCKSTEP_TYPE_F32 && t != LOCKSTEP_TYPE_F16 && t != LOCKSTEP_TYPE_Q8_0 && t != LOCKSTEP_TYPE_Q4_0)
                throw Error(LOCKSTEP_ERR_INVALID_ARGUMENT, std::string(what) + " " + std::to_string(t) +
                                                               " is not a cache type (LOCKSTEP_TYPE_F32, F16, Q8_0 or Q4_0)");
            *dst = DType(t);
        }
        auto h = std::make_unique<lockstep_session>();
        h->m = m;
        h->s = std::make_unique<Session>(m->model(), sp);
        *session = h.release();
    });
}

LOCKSTEP_API void lockstep_session_free(lockstep_session* session) { delete session; }

LOCKSTEP_API int64_t lockstep_session_n_ctx(const lockstep_session* s) {
    return guarded_value("lockstep_session_n_ctx", int64_t(-1), [&] { return session(s).s->params().n_ctx; });
}

LOCKSTEP_API int64_t lockstep_session_n_ubatch(const lockstep_session* s) {
    return guarded_value("lockstep_session_n_ubatch", int64_t(-1), [&] { return session(s).s->params().n_ubatch; });
}

LOCKSTEP_API int32_t lockstep_session_n_seq(const lockstep_session* s) {
    return guarded_value("lockstep_session_n_seq", int32_t(-1), [&] { return session(s).s->params().n_seq; });
}

LOCKSTEP_API int lockstep_decode(lockstep_session* s, const lockstep_batch* batch) {
    return do_decode("lockstep_decode", s, batch, DecodeOutput::Logits);
}

LOCKSTEP_API int lockstep_decode_hidden(lockstep_session* s, const lockstep_batch* batch) {
    return do_decode("lockstep_decode_hidden", s, batch, DecodeOutput::Hidden);
}

LOCKSTEP_API int lockstep_get_logits(lockstep_session* s, int32_t i, const float** logits) {
    return guarded("lockstep_get_logits", [&] {
        lockstep_session& h = session(s);
        need(logits, "logits");
        *logits = output_row(h, i, false);
    });
}

LOCKSTEP_API int lockstep_get_hidden(lockstep_session* s, int32_t i, const float** hidden) {
    return guarded("lockstep_get_hidden", [&] {
        lockstep_session& h = session(s);
        need(hidden, "hidden");
        *hidden = output_row(h, i, true);
    });
}

LOCKSTEP_API int lockstep_get_outputs(lockstep_session* s, const float** rows, int32_t* n_rows, int64_t* row_len) {
    return guarded("lockstep_get_outputs", [&] {
        lockstep_session& h = session(s);
        need(rows, "rows");
        need(n_rows, "n_rows");
        need(row_len, "row_len");
        *rows = h.out.data();
        *n_rows = h.rows;
        *row_len = h.rows ? h.row_len : h.s->n_vocab();
    });
}

LOCKSTEP_API int64_t lockstep_seq_len(const lockstep_session* s, int32_t seq) {
    return guarded_value("lockstep_seq_len", int64_t(-1), [&] {
        const lockstep_session& h = session(s);
        check_seq(h, seq);
        return h.s->seq_len(seq);
    });
}

LOCKSTEP_API int lockstep_seq_tokens(const lockstep_session* s, int32_t seq, const int32_t** tokens, int64_t* n) {
    return guarded("lockstep_seq_tokens", [&] {
        const lockstep_session& h = session(s);
        need(tokens, "tokens");
        need(n, "n");
        check_seq(h, seq);
        const std::vector<int32_t>& t = h.s->seq_tokens(seq);
        *tokens = t.data();
        *n = int64_t(t.size());
    });
}

LOCKSTEP_API int lockstep_seq_rm(lockstep_session* s, int32_t seq, int64_t p0) {
    return guarded("lockstep_seq_rm", [&] {
        lockstep_session& h = session(s);
        check_seq(h, seq);
        if (p0 < 0) throw Error(LOCKSTEP_ERR_OUT_OF_RANGE, "position " + std::to_string(p0) + " is negative");
        check_edit(h.s->seq_rm(seq, p0), "sequence " + std::to_string(seq) + " (length " + std::to_string(h.s->seq_len(seq)) +
                                             ") cannot return to position " + std::to_string(p0) +
                                             ": its memory no longer holds what that point needs (a sliding-window ring that moved on, "
                                             "or a recurrent state not checkpointed there)");
    });
}

LOCKSTEP_API int lockstep_seq_cp(lockstep_session* s, int32_t src, int32_t dst, int64_t p1) {
    return guarded("lockstep_seq_cp", [&] {
        lockstep_session& h = session(s);
        check_seq(h, src);
        check_seq(h, dst);
        check_edit(h.s->seq_cp(src, dst, p1 < 0 ? -1 : p1), "sequence " + std::to_string(src) + " cannot be copied up to position " +
                                                                 std::to_string(p1) + " (a recurrent state copies whole sequences only; a "
                                                                 "sliding-window ring may no longer hold that point)");
    });
}

LOCKSTEP_API int lockstep_seq_keep(lockstep_session* s, int32_t seq) {
    return guarded("lockstep_seq_keep", [&] {
        lockstep_session& h = session(s);
        check_seq(h, seq);
        h.s->seq_keep(seq);
    });
}

LOCKSTEP_API int lockstep_session_reset(lockstep_session* s) {
    return guarded("lockstep_session_reset", [&] {
        lockstep_session& h = session(s);
        h.s->reset();
        h.rows = 0;
    });
}

LOCKSTEP_API int lockstep_seq_reuse_prefix(lockstep_session* s, int32_t seq, const int32_t* prompt, int64_t n, int64_t* kept) {
    return guarded("lockstep_seq_reuse_prefix", [&] {
        lockstep_session& h = session(s);
        need(kept, "kept");
        *kept = 0;
        check_seq(h, seq);
        if (n < 0) throw Error(LOCKSTEP_ERR_INVALID_ARGUMENT, "n is negative");
        if (n > 0) need(prompt, "prompt");
        *kept = h.s->reuse_prefix(seq, std::vector<int32_t>(prompt, prompt + n));
    });
}

LOCKSTEP_API int lockstep_seq_checkpoint(lockstep_session* s, int32_t seq, int32_t* taken) {
    return guarded("lockstep_seq_checkpoint", [&] {
        lockstep_session& h = session(s);
        check_seq(h, seq);
        const bool t = h.s->checkpoint(seq);
        if (taken) *taken = t ? 1 : 0;
    });
}

LOCKSTEP_API int lockstep_state_seq_size(const lockstep_session* s, int32_t seq, size_t* n_bytes) {
    return guarded("lockstep_state_seq_size", [&] {
        const lockstep_session& h = session(s);
        need(n_bytes, "n_bytes");
        check_seq(h, seq);
        *n_bytes = h.s->seq_state_bytes(seq);
    });
}

LOCKSTEP_API int lockstep_state_seq_save(const lockstep_session* s, int32_t seq, uint8_t* buf, size_t buf_len, size_t* n_out) {
    return guarded("lockstep_state_seq_save", [&] {
        const lockstep_session& h = session(s);
        need(n_out, "n_out");
        *n_out = 0;
        check_seq(h, seq);
        const size_t n = h.s->seq_state_bytes(seq);
        if (buf_len < n) {
            *n_out = n;
            throw Error(LOCKSTEP_ERR_BUFFER_TOO_SMALL, "needs " + std::to_string(n) + " bytes, the buffer has " + std::to_string(buf_len));
        }
        const std::vector<uint8_t> bytes = h.s->save_seq(seq);
        put_bytes(reinterpret_cast<const char*>(bytes.data()), bytes.size(), reinterpret_cast<char*>(buf), buf_len, n_out);
    });
}

LOCKSTEP_API int lockstep_state_seq_load(lockstep_session* s, int32_t seq, const uint8_t* buf, size_t len) {
    return guarded("lockstep_state_seq_load", [&] {
        lockstep_session& h = session(s);
        if (len > 0) need(buf, "buf");
        load_state(h, seq, buf, len);
    });
}

LOCKSTEP_API int lockstep_state_seq_save_file(const lockstep_session* s, int32_t seq, const char* path) {
    return guarded("lockstep_state_seq_save_file", [&] {
        const lockstep_session& h = session(s);
        need(path, "path");
        check_seq(h, seq);
        const std::vector<uint8_t> bytes = h.s->save_seq(seq);
        std::ofstream f(path, std::ios::binary | std::ios::trunc);
        if (!f) throw Error(LOCKSTEP_ERR_IO, std::string("cannot write ") + path + ": " + std::strerror(errno));
        f.write(reinterpret_cast<const char*>(bytes.data()), std::streamsize(bytes.size()));
        f.close();
        if (!f) throw Error(LOCKSTEP_ERR_IO, std::string("writing ") + path + " failed");
    });
}

LOCKSTEP_API int lockstep_state_seq_load_file(lockstep_session* s, int32_t seq, const char* path) {
    return guarded("lockstep_state_seq_load_file", [&] {
        lockstep_session& h = session(s);
        need(path, "path");
        check_seq(h, seq);
        std::ifstream f(path, std::ios::binary);
        if (!f) throw Error(LOCKSTEP_ERR_IO, std::string("cannot read ") + path + ": " + std::strerror(errno));
        const std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
        if (f.bad()) throw Error(LOCKSTEP_ERR_IO, std::string("reading ") + path + " failed");
        load_state(h, seq, bytes.data(), bytes.size());
    });
}

LOCKSTEP_API int lockstep_embed(lockstep_session* s, int32_t seq, const int32_t* tokens, int32_t n_tokens, int32_t pooling, int32_t normalize,
                                float* out, int64_t out_len) {
    return guarded("lockstep_embed", [&] {
        lockstep_session& h = session(s);
        check_seq(h, seq);
        if (n_tokens < 1) throw Error(LOCKSTEP_ERR_INVALID_ARGUMENT, "an embedding needs at least one token, got " + std::to_string(n_tokens));
        need(tokens, "tokens");
        need(out, "out");
        const int64_t n_embd = h.s->n_embd();
        if (out_len < n_embd)
            throw Error(LOCKSTEP_ERR_INVALID_ARGUMENT, "out has room for " + std::to_string(out_len) + " floats, the embedding has " +
                                                           std::to_string(n_embd));
        if (pooling < LOCKSTEP_POOLING_MODEL || pooling > LOCKSTEP_POOLING_LAST)
            throw Error(LOCKSTEP_ERR_INVALID_ARGUMENT, "pooling " + std::to_string(pooling) + " is not one of LOCKSTEP_POOLING_*");
        if (normalize < -1) throw Error(LOCKSTEP_ERR_INVALID_ARGUMENT, "normalize " + std::to_string(normalize) + " is below -1");
        const Pooling pool = pooling == LOCKSTEP_POOLING_MODEL ? model_pooling(h.m->model()) : Pooling(pooling);
        if (pool == Pooling::None)
            throw Error(LOCKSTEP_ERR_INVALID_ARGUMENT, pooling == LOCKSTEP_POOLING_MODEL
                                                           ? "the model names no pooling (" + h.m->hp().arch + ".pooling_type): pass one"
                                                           : std::string("pooling NONE gives no sequence embedding (per-token states: lockstep_decode_hidden)"));
        const std::vector<float> v = embed(*h.s, seq, std::vector<int32_t>(tokens, tokens + n_tokens), pool, normalize);
        std::copy(v.begin(), v.end(), out);
    });
}

}  // extern "C"
