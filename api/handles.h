// The C API's handles (include/lockstep.h) and the guard every entry point runs in: it
// clears this thread's message, runs the body, and turns any exception into a status code
// and a message, so that none crosses the C boundary.
#pragma once
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

#include "lockstep.h"

#include "core/chat/chat_format.h"
#include "core/grammar/token_mask.h"
#include "core/runtime/session.h"
#include "core/sampling/sampler.h"
#include "core/text/tokenizer.h"
#include "loader/open_model.h"

namespace ls::capi {

// What a model handle, and every session and sampler made from it, share: a handle may be
// freed before the handles made from it (a garbage collector frees them in any order).
struct ModelState {
    OpenedModel opened;  // the devices, then the model (freed first); no model with vocab_only
    std::unique_ptr<GgufFile> vocab_file;  // vocab_only: the file, its tensors never read
    Hparams vocab_hp;                      // vocab_only: what the metadata says (no layers)
    std::unique_ptr<Tokenizer> tok;

    bool vocab_only() const { return !opened.model; }
    // The model, or UNSUPPORTED for one loaded with vocab_only.
    const Model& model() const;
    const GgufFile& gguf() const { return opened.model ? opened.model->gguf() : *vocab_file; }
    const Hparams& hp() const { return opened.model ? opened.model->hparams() : vocab_hp; }

    // Every token's bytes, without and with control tokens' text (lockstep_token_piece):
    // built on first use, one blob.
    struct Piece {
        uint32_t off, len;
    };
    const Piece& piece(int32_t id, bool render_special) const;
    const char* piece_data(const Piece& p) const { return blob_.data() + p.off; }
    // The vocabulary as a grammar sees it, built with the first grammar sampler.
    std::shared_ptr<const grammar::TokenMask> grammar_vocab() const;
    // The model's own chat format (or its family's built-in one), made on first use.
    const chat::ChatFormat& chat_format() const;

private:
    mutable std::once_flag pieces_once_, vocab_once_;
    mutable std::string blob_;
    mutable std::vector<Piece> pieces_[2];
    mutable std::shared_ptr<const grammar::TokenMask> vocab_;
    mutable std::mutex chat_mu_;
    mutable std::unique_ptr<chat::ChatFormat> chat_;
};

// An error this layer raises itself, with its status.
struct Error : std::runtime_error {
    int status;
    Error(int s, const std::string& m) : std::runtime_error(m), status(s) {}
};

// Clears this thread's message; records one (prefixed by the function's name) and returns the status.
void clear_error() noexcept;
const char* last_message() noexcept;
int set_error(const char* fn, int status, const char* msg) noexcept;
// Inside a catch: the status and message of the exception being handled.
int error_from_current(const char* fn) noexcept;

// Runs body() (which returns nothing); returns LOCKSTEP_OK, or the failure's status.
template <class F>
int guarded(const char* fn, F&& body) noexcept {
    clear_error();
    try {
        body();
        return LOCKSTEP_OK;
    } catch (...) {
        return error_from_current(fn);
    }
}
// The same for a getter: its value, or `bad` on failure.
template <class T, class F>
T guarded_value(const char* fn, T bad, F&& body) noexcept {
    clear_error();
    try {
        return body();
    } catch (...) {
        error_from_current(fn);
        return bad;
    }
}

// Argument checks, raising Error(LOCKSTEP_ERR_INVALID_ARGUMENT) naming the argument.
template <class T>
T* need(T* p, const char* what) {
    if (!p) throw Error(LOCKSTEP_ERR_INVALID_ARGUMENT, std::string(what) + " is NULL");
    return p;
}
// A token id in the vocabulary (OUT_OF_RANGE naming it).
void check_token(const ModelState& m, int32_t id);
// Copies n bytes into a caller's buffer by the buffer rule (include/lockstep.h): *n_out = n;
// LOCKSTEP_ERR_BUFFER_TOO_SMALL when buf_len < n; a NUL after them when there is room.
void put_bytes(const char* data, size_t n, char* buf, size_t buf_len, size_t* n_out);

}  // namespace ls::capi

struct lockstep_session;
namespace ls::capi {
// Output row i of the session's last decode (negative: from the end): logits, or with
// `hidden` hidden states; raising when the last decode gave the other kind or i is outside.
const float* output_row(lockstep_session& h, int32_t i, bool hidden);
}  // namespace ls::capi

struct lockstep_model {
    std::shared_ptr<ls::capi::ModelState> m;
};

struct lockstep_session {
    std::shared_ptr<ls::capi::ModelState> m;
    std::unique_ptr<ls::Session> s;
    // The last decode's output rows: rows x row_len floats; hidden: hidden states, not logits.
    std::vector<float> out;
    int32_t rows = 0;
    int64_t row_len = 0;
    bool hidden = false;
};

struct lockstep_sampler {
    std::shared_ptr<ls::capi::ModelState> m;
    ls::SamplerParams p;
    std::unique_ptr<ls::Sampler> s;
    std::vector<float> scratch;  // the logits a sample edits (the caller's stay as they are)
    int32_t n_vocab = 0;
};
