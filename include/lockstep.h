/* lockstep's C API: load a GGUF model, tokenize, decode batches of sequences, sample, generate,
 * render chat templates, compute embeddings and save a sequence's state.
 *
 * C99, C linkage, opaque handles. Every function that can fail returns an int status
 * (LOCKSTEP_OK, 0, or a negative LOCKSTEP_ERR_*), and on failure leaves a message for this thread
 * in lockstep_last_error(); no C++ exception crosses this boundary. Getters that return a
 * value return -1 (or NULL) for a NULL handle or an argument out of range, with the message set.
 *
 * Outputs into caller buffers follow one rule: the function writes the size it needs into
 * *n_out (bytes or tokens, without a terminating NUL); when the buffer is too small it writes
 * nothing else and returns LOCKSTEP_ERR_BUFFER_TOO_SMALL, so a caller may ask first with a
 * NULL buffer of capacity 0. Text is bytes with an exact length (it may hold NUL bytes and,
 * for a token's piece, part of a UTF-8 character); a NUL follows when the buffer has room.
 *
 * Lifetimes: a session, sampler or chat render keeps what it needs of its model, so handles may
 * be freed in any order. Pointers into a handle (logits, pieces, cached tokens) stay valid until
 * the call named at each function. Threads: a model may be used from several threads at once;
 * a session and a sampler from one thread at a time.
 *
 * Link with -llockstep (pkg-config lockstep, or CMake's find_package(lockstep), target
 * lockstep::lockstep). */
#ifndef LOCKSTEP_H
#define LOCKSTEP_H

#include <stddef.h>
#include <stdint.h>

#if defined(_WIN32) && !defined(LOCKSTEP_STATIC)
#  ifdef LOCKSTEP_BUILDING
#    define LOCKSTEP_API __declspec(dllexport)
#  else
#    define LOCKSTEP_API __declspec(dllimport)
#  endif
#elif defined(__GNUC__)
#  define LOCKSTEP_API __attribute__((visibility("default")))
#else
#  define LOCKSTEP_API
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* The version of this interface: raised when a function, struct or meaning changes. A program
 * built against one header should check lockstep_api_version() == LOCKSTEP_API_VERSION. */
#define LOCKSTEP_API_VERSION 2

/* ---- status codes ---------------------------------------------------------------------- */

#define LOCKSTEP_OK 0
#define LOCKSTEP_ERR_INVALID_ARGUMENT (-1)  /* a NULL handle or pointer, a wrong size, a bad value */
#define LOCKSTEP_ERR_OUT_OF_RANGE (-2)      /* a token id, sequence id, position or output row outside its range */
#define LOCKSTEP_ERR_BUFFER_TOO_SMALL (-3)  /* the caller's buffer: *n_out says what is needed */
#define LOCKSTEP_ERR_NOT_FOUND (-4)         /* a metadata key or template the model does not have */
#define LOCKSTEP_ERR_IO (-5)                /* a file that cannot be opened, read or written */
#define LOCKSTEP_ERR_FORMAT (-6)            /* a broken or truncated GGUF file, a damaged or foreign state */
#define LOCKSTEP_ERR_TOO_LONG (-7)          /* more tokens than the context, batch or ubatch holds */
#define LOCKSTEP_ERR_UNSUPPORTED (-8)       /* what this model or its memory cannot do (e.g. seq_rm inside a recurrent state) */
#define LOCKSTEP_ERR_TEMPLATE (-9)          /* a chat template that does not parse or render */
#define LOCKSTEP_ERR_GRAMMAR (-10)          /* a GBNF grammar or JSON schema that does not parse, or that nothing can continue */
#define LOCKSTEP_ERR_OUT_OF_MEMORY (-11)
#define LOCKSTEP_ERR_RUNTIME (-12)          /* a backend, device or evaluation failure */
#define LOCKSTEP_ERR_INTERNAL (-13)         /* a bug: please report the message */

/* Returns LOCKSTEP_API_VERSION as this library was built. */
LOCKSTEP_API int32_t lockstep_api_version(void);
/* Returns the project's version, "MAJOR.MINOR.PATCH" (static storage). */
LOCKSTEP_API const char* lockstep_version(void);
/* Returns the message of the last call on this thread that failed, or "" when the last call
 * succeeded (every function clears it on entry). Valid until this thread's next lockstep call. */
LOCKSTEP_API const char* lockstep_last_error(void);
/* Returns the name of a status code ("LOCKSTEP_ERR_OUT_OF_RANGE"; "LOCKSTEP_ERR_UNKNOWN" for
 * another number), static storage. */
LOCKSTEP_API const char* lockstep_status_name(int status);

/* ---- models ---------------------------------------------------------------------------- */

typedef struct lockstep_model lockstep_model;

/* Where the weights go. Start from lockstep_model_default_params(). */
typedef struct lockstep_model_params {
    const char* backend;        /* "cpu" (NULL: "cpu"), "vulkan", "cuda" or "reference" */
    int32_t device;             /* the backend's device index (0) */
    int32_t n_threads;          /* CPU threads; <= 0: one per core (0) */
    const char* devices;        /* a device list "cuda0,cuda1" to place the model over (NULL: backend's device) */
    int32_t n_gpu_layers;       /* -1: every layer on the GPU devices (-1); N: the last N, the output head counting as one */
    int32_t split_mode;         /* over several GPU devices: 0 none (first GPU only), 1 by layers (1), 2 by rows */
    const float* tensor_split;  /* shares per GPU device, n_tensor_split of them (NULL: by free memory) */
    int32_t n_tensor_split;
    int32_t use_mmap;           /* -1: copy when it fits in half the free memory, else map (-1); 0: copy; 1: map in place */
    int32_t vocab_only;         /* nonzero: the metadata and vocabulary only, no weights (0): tokenize, detokenize,
                                   metadata and chat templates work; sessions and embeddings are UNSUPPORTED.
                                   (Since version 2.) */
} lockstep_model_params;

/* The defaults above. */
LOCKSTEP_API lockstep_model_params lockstep_model_default_params(void);

/* Opens the GGUF file at `path` and loads its weights as `params` (NULL: the defaults) say.
 * On success *model is the handle (free it with lockstep_model_free). Errors: IO (no such file),
 * FORMAT (a broken or truncated file), INVALID_ARGUMENT (an unknown backend or device name, a
 * bad placement value), RUNTIME (an architecture not supported, a missing tensor, a device
 * index this machine lacks, a device that fails, a placement that does not fit). */
LOCKSTEP_API int lockstep_model_load(const char* path, const lockstep_model_params* params, lockstep_model** model);
/* Frees the handle (NULL: nothing). Sessions and samplers made from it stay usable. */
LOCKSTEP_API void lockstep_model_free(lockstep_model* model);

/* The vocabulary size (token ids are 0 .. n_vocab-1). */
LOCKSTEP_API int32_t lockstep_model_n_vocab(const lockstep_model* model);
/* The context the model was trained with (its GGUF's <arch>.context_length; 0 if absent). */
LOCKSTEP_API int64_t lockstep_model_n_ctx_train(const lockstep_model* model);
/* The width of the hidden state: the length of an embedding. */
LOCKSTEP_API int64_t lockstep_model_n_embd(const lockstep_model* model);
/* The number of layers. */
LOCKSTEP_API int32_t lockstep_model_n_layer(const lockstep_model* model);
/* 1 when the model has an output head (gives logits: text generation), 0 for an embedding-only
 * model (BERT, EmbeddingGemma), which gives hidden states and embeddings only; -1
 * (UNSUPPORTED) for a model loaded with vocab_only. */
LOCKSTEP_API int32_t lockstep_model_has_logits(const lockstep_model* model);
/* 1 when every layer keeps a recurrent state and none a KV cache (Mamba-style), else 0.
 * -1 (UNSUPPORTED) for a model loaded with vocab_only. (Since version 2.) */
LOCKSTEP_API int32_t lockstep_model_is_recurrent(const lockstep_model* model);
/* 1 when some layers keep a recurrent state and others a KV cache (Qwen3.5, Qwen3-Next), else
 * 0. -1 (UNSUPPORTED) for a model loaded with vocab_only. (Since version 2.) */
LOCKSTEP_API int32_t lockstep_model_is_hybrid(const lockstep_model* model);
/* 1 when the model was loaded with vocab_only. (Since version 2.) */
LOCKSTEP_API int32_t lockstep_model_vocab_only(const lockstep_model* model);
/* The pooling its GGUF names (LOCKSTEP_POOLING_*; NONE where the file has no <arch>.pooling_type). */
LOCKSTEP_API int32_t lockstep_model_pooling(const lockstep_model* model);
/* The size of the model file in bytes. */
LOCKSTEP_API int64_t lockstep_model_size(const lockstep_model* model);

/* Metadata: the GGUF's key-value pairs, in file order. */
LOCKSTEP_API int32_t lockstep_model_meta_count(const lockstep_model* model);
/* The i-th key (0 <= i < meta_count) into buf (the buffer rule above). */
LOCKSTEP_API int lockstep_model_meta_key(const lockstep_model* model, int32_t i, char* buf, size_t buf_len, size_t* n_out);
/* The value of `key` as text into buf: a string as it is, a number in decimal, a bool as
 * "true"/"false", an array as JSON. NOT_FOUND when the file has no such key. */
LOCKSTEP_API int lockstep_model_meta_get(const lockstep_model* model, const char* key, char* buf, size_t buf_len, size_t* n_out);
/* The model's own chat template, its Jinja source (tokenizer.chat_template; `name` non-NULL:
 * tokenizer.chat_template.<name>). NOT_FOUND when the file has none. */
LOCKSTEP_API int lockstep_model_chat_template(const lockstep_model* model, const char* name, char* buf, size_t buf_len, size_t* n_out);

/* ---- tokens ---------------------------------------------------------------------------- */

/* The beginning-of-sequence token, or -1 where the vocabulary has none. */
LOCKSTEP_API int32_t lockstep_token_bos(const lockstep_model* model);
/* The end-of-sequence token, or -1. */
LOCKSTEP_API int32_t lockstep_token_eos(const lockstep_model* model);
/* The end-of-turn token of a chat model (<end_of_turn>, <|eot_id|>, ...), or -1. */
LOCKSTEP_API int32_t lockstep_token_eot(const lockstep_model* model);
/* 1 when the vocabulary asks for BOS at the start of a text (what tokenize's add_special
 * should be for a plain prompt), else 0. */
LOCKSTEP_API int32_t lockstep_model_add_bos(const lockstep_model* model);
/* 1 when generation ends at this token (eos, eot and the like), 0 when not, -1 for an id
 * outside the vocabulary. */
LOCKSTEP_API int32_t lockstep_token_is_eog(const lockstep_model* model, int32_t token);
/* Token types (the GGUF's tokenizer.ggml.token_type). */
#define LOCKSTEP_TOKEN_TYPE_UNDEFINED 0
#define LOCKSTEP_TOKEN_TYPE_NORMAL 1
#define LOCKSTEP_TOKEN_TYPE_UNKNOWN 2
#define LOCKSTEP_TOKEN_TYPE_CONTROL 3
#define LOCKSTEP_TOKEN_TYPE_USER_DEFINED 4
#define LOCKSTEP_TOKEN_TYPE_UNUSED 5
#define LOCKSTEP_TOKEN_TYPE_BYTE 6
/* The token's type, LOCKSTEP_TOKEN_TYPE_*, or -1 for an id outside the vocabulary. */
LOCKSTEP_API int32_t lockstep_token_type(const lockstep_model* model, int32_t token);

/* Encodes text_len bytes of `text` into token ids. add_special: the vocabulary's BOS (and
 * EOS, or BERT's [CLS] .. [SEP]) where it adds them; parse_special: control tokens written
 * as text ("<start_of_turn>") become their ids. Writes *n_tokens; tokens follow the buffer rule
 * (capacity n_tokens_max; text_len + 4 is a first guess that is rarely short). */
LOCKSTEP_API int lockstep_tokenize(const lockstep_model* model, const char* text, size_t text_len, int32_t add_special,
                                   int32_t parse_special, int32_t* tokens, int32_t n_tokens_max, int32_t* n_tokens);
/* The bytes token ids stand for, into buf (the buffer rule). render_special: control tokens
 * give their text ("<eos>"), else nothing. A SentencePiece vocabulary's added leading space
 * is dropped from the first piece, as Tokenizer::decode does. */
LOCKSTEP_API int lockstep_detokenize(const lockstep_model* model, const int32_t* tokens, int32_t n_tokens, int32_t render_special,
                                     char* buf, size_t buf_len, size_t* n_out);
/* One token's bytes without a copy: *piece points into a table the model keeps (built on the
 * first call: every token once), *len is its exact byte count (a piece may be part of a UTF-8
 * character, or empty). render_special as for detokenize; no leading space is dropped, so
 * pieces concatenate to the text as generated. Valid until the model handle and every session
 * and sampler made from it are freed. */
LOCKSTEP_API int lockstep_token_piece(const lockstep_model* model, int32_t token, int32_t render_special, const char** piece,
                                      int32_t* len);

/* ---- sessions: KV memory of several sequences --------------------------------------------- */

typedef struct lockstep_session lockstep_session;

/* Cache element types: the GGUF / ggml type ids. */
#define LOCKSTEP_TYPE_F32 0
#define LOCKSTEP_TYPE_F16 1
#define LOCKSTEP_TYPE_Q4_0 2
#define LOCKSTEP_TYPE_Q8_0 8

typedef struct lockstep_session_params {
    int64_t n_ctx;     /* positions per sequence (4096); 0: the model's training context; clamped to it */
    int64_t n_batch;   /* the most tokens one decode call takes (2048) */
    int64_t n_ubatch;  /* tokens per graph run (512), at most n_batch and n_ctx */
    int32_t n_seq;     /* sequence slots, ids 0 .. n_seq-1 (1) */
    int32_t type_k;    /* K cache type: LOCKSTEP_TYPE_F16 (default), F32, Q8_0 or Q4_0 */
    int32_t type_v;    /* V cache type, the same choices */
} lockstep_session_params;

/* The defaults above. */
LOCKSTEP_API lockstep_session_params lockstep_session_default_params(void);
/* Makes a session over `model` (params NULL: the defaults); free it with lockstep_session_free. */
LOCKSTEP_API int lockstep_session_new(lockstep_model* model, const lockstep_session_params* params, lockstep_session** session);
/* Frees the session and its memory (NULL: nothing). */
LOCKSTEP_API void lockstep_session_free(lockstep_session* session);
/* The positions per sequence after clamping: what the session holds. */
LOCKSTEP_API int64_t lockstep_session_n_ctx(const lockstep_session* session);
/* The tokens per graph run after clamping. */
LOCKSTEP_API int64_t lockstep_session_n_ubatch(const lockstep_session* session);
/* The number of sequence slots. */
LOCKSTEP_API int32_t lockstep_session_n_seq(const lockstep_session* session);

/* Tokens of any sequences, evaluated in one call. Each sequence's tokens must continue it at
 * positions seq_len, seq_len+1, ... in batch order. */
typedef struct lockstep_batch {
    int32_t n_tokens;
    const int32_t* tokens;  /* n_tokens ids */
    const int32_t* pos;     /* positions (NULL: each token continues its sequence) */
    const int32_t* seq_id;  /* sequences (NULL: all sequence 0) */
    const int8_t* logits;   /* nonzero: give this token's output row (NULL: the last token only) */
} lockstep_batch;

/* Evaluates the batch, whole or not at all: every token, sequence and position is checked
 * before anything runs (OUT_OF_RANGE for a token or sequence id, INVALID_ARGUMENT for a
 * position that does not continue its sequence, TOO_LONG past the context or n_batch). The
 * logits (n_vocab floats) of the flagged tokens, in batch order, are then the session's
 * outputs (lockstep_get_logits). An output is the same bits whatever else shares its batch. */
LOCKSTEP_API int lockstep_decode(lockstep_session* session, const lockstep_batch* batch);
/* The same, giving each flagged token's final normalized hidden state (n_embd floats) instead
 * of logits (lockstep_get_hidden): per-token embeddings. */
LOCKSTEP_API int lockstep_decode_hidden(lockstep_session* session, const lockstep_batch* batch);
/* Output row i of the last decode (0 <= i < n_outputs; negative counts from the end, -1 the
 * last): n_vocab logits, without a copy. Valid until the session's next decode, generate,
 * embed, state load or free. INVALID_ARGUMENT when the last decode gave hidden states. */
LOCKSTEP_API int lockstep_get_logits(lockstep_session* session, int32_t i, const float** logits);
/* The same for lockstep_decode_hidden's rows: n_embd floats. */
LOCKSTEP_API int lockstep_get_hidden(lockstep_session* session, int32_t i, const float** hidden);
/* Every output row of the last decode at once: *rows points at n_rows x row_len floats, row
 * after row (row_len: n_vocab, or n_embd after decode_hidden; n_rows 0 before any decode). */
LOCKSTEP_API int lockstep_get_outputs(lockstep_session* session, const float** rows, int32_t* n_rows, int64_t* row_len);

/* A sequence's length (its next position), or -1 for a sequence id out of range. */
LOCKSTEP_API int64_t lockstep_seq_len(const lockstep_session* session, int32_t seq);
/* The tokens the sequence holds, without a copy: *n of them (= its length). Valid until the
 * session changes (decode, generate, a sequence edit, embed, state load, free). */
LOCKSTEP_API int lockstep_seq_tokens(const lockstep_session* session, int32_t seq, const int32_t** tokens, int64_t* n);
/* Drops positions p0 and later of the sequence (p0 >= its length: nothing). UNSUPPORTED (and
 * nothing changed) where the memory cannot return to p0: a sliding-window ring that no
 * longer holds the keys p0 needs, or a recurrent state not checkpointed at p0 (0 always works). */
LOCKSTEP_API int lockstep_seq_rm(lockstep_session* session, int32_t seq, int64_t p0);
/* Makes sequence dst a copy of src's positions [0, p1) (p1 < 0: all of it); dst's old contents
 * are dropped. UNSUPPORTED as for seq_rm (recurrent models copy whole sequences only). */
LOCKSTEP_API int lockstep_seq_cp(lockstep_session* session, int32_t src, int32_t dst, int64_t p1);
/* Empties every sequence but seq. */
LOCKSTEP_API int lockstep_seq_keep(lockstep_session* session, int32_t seq);
/* Empties every sequence. */
LOCKSTEP_API int lockstep_session_reset(lockstep_session* session);
/* Prepares sequence seq for a prompt of n tokens: keeps the longest prefix of it that the
 * sequence holds and its memory can return to (always leaving at least one token to evaluate,
 * for its logits), else empties it. *kept: how many prompt tokens are kept; evaluate the rest. */
LOCKSTEP_API int lockstep_seq_reuse_prefix(lockstep_session* session, int32_t seq, const int32_t* prompt, int64_t n, int64_t* kept);
/* Models with recurrent layers: remembers the sequence's state at its current length, so that
 * a later seq_rm (or reuse_prefix) to exactly there succeeds. *taken: 1, or 0 for a model
 * without recurrent layers (which needs none). lockstep_generate takes one after each prompt. */
LOCKSTEP_API int lockstep_seq_checkpoint(lockstep_session* session, int32_t seq, int32_t* taken);

/* ---- state of one sequence ---------------------------------------------------------------- */

/* The bytes lockstep_state_seq_save writes for this sequence now. */
LOCKSTEP_API int lockstep_state_seq_size(const lockstep_session* session, int32_t seq, size_t* n_bytes);
/* Writes the sequence's state (its tokens, the KV rows its memory holds, its recurrent state,
 * after a header naming the model and the cache types) into buf (the buffer rule). */
LOCKSTEP_API int lockstep_state_seq_save(const lockstep_session* session, int32_t seq, uint8_t* buf, size_t buf_len, size_t* n_out);
/* Makes sequence seq hold what a save wrote, in a session of the same model with the same
 * cache types and room for its tokens (the context and ubatch may differ). Checked before
 * anything changes: FORMAT for another model, other cache types or damaged bytes, TOO_LONG
 * for more tokens than the context holds. A hybrid model's checkpoint is not part of it. */
LOCKSTEP_API int lockstep_state_seq_load(lockstep_session* session, int32_t seq, const uint8_t* buf, size_t len);
/* The same as lockstep_state_seq_save, into the file at `path` (IO when it cannot be written). */
LOCKSTEP_API int lockstep_state_seq_save_file(const lockstep_session* session, int32_t seq, const char* path);
/* The same as lockstep_state_seq_load, from the file at `path` (IO when it cannot be read). */
LOCKSTEP_API int lockstep_state_seq_load_file(lockstep_session* session, int32_t seq, const char* path);

/* ---- embeddings ---------------------------------------------------------------------------- */

#define LOCKSTEP_POOLING_MODEL (-1)  /* what the model's GGUF says */
#define LOCKSTEP_POOLING_NONE 0
#define LOCKSTEP_POOLING_MEAN 1
#define LOCKSTEP_POOLING_CLS 2
#define LOCKSTEP_POOLING_LAST 3

/* The embedding of n_tokens tokens (tokenized with add_special, as a model expects), pooled
 * and normalized (normalize: -1 none, 0 max-abs to int16 range, 1 taxicab, 2 euclidean, p > 2
 * the p-norm), into out[0 .. n_embd) (out_len must be at least n_embd). Evaluated in sequence
 * seq, which is emptied first and holds the tokens afterwards. INVALID_ARGUMENT for pooling
 * NONE (the model's when it names none: pass one; per-token states: lockstep_decode_hidden). */
LOCKSTEP_API int lockstep_embed(lockstep_session* session, int32_t seq, const int32_t* tokens, int32_t n_tokens, int32_t pooling,
                                int32_t normalize, float* out, int64_t out_len);

/* ---- sampling ------------------------------------------------------------------------------ */

typedef struct lockstep_sampler lockstep_sampler;

/* The sampler of the CLI and the server: logit bias, penalties, an optional grammar, then
 * greedy, or top-k, temperature, top-p, min-p and a draw keyed by (seed, stream, position),
 * so a given seed gives the same tokens however the work was batched. */
typedef struct lockstep_sampler_params {
    float temp;                 /* <= 0: greedy (argmax, ties to the lower id) (0.8) */
    int32_t top_k;              /* <= 0 or >= n_vocab: off (40) */
    float top_p;                /* >= 1: off (0.95) */
    float min_p;                /* <= 0: off (0.05) */
    float repeat_penalty;       /* 1: off (1) */
    float frequency_penalty;    /* OpenAI's: logit -= count * frequency + (count > 0) * presence (0, 0) */
    float presence_penalty;
    int32_t repeat_last_n;      /* how many of the latest tokens are penalized; -1: all (64) */
    uint64_t seed;              /* (0) */
    uint64_t stream;            /* the sequence's identity in the draw key (0) */
    const int32_t* logit_bias_tokens;  /* n_logit_bias ids and the values added to their logits */
    const float* logit_bias_values;    /* (-INFINITY bans a token) */
    int32_t n_logit_bias;
    const char* grammar;        /* GBNF the output must follow (NULL: none) */
    const char* json_schema;    /* or a JSON schema (text) the output must be a document of (NULL: none) */
    int32_t n_logprobs;         /* > 0: record the chosen token's log-probability and the n most likely (0: off) */
} lockstep_sampler_params;

/* The defaults above (those of the CLI). */
LOCKSTEP_API lockstep_sampler_params lockstep_sampler_default_params(void);
/* Makes a sampler for `model`'s vocabulary (params NULL: the defaults). GRAMMAR for a grammar
 * or schema that does not parse; INVALID_ARGUMENT for both given, or a bias token out of range. */
LOCKSTEP_API int lockstep_sampler_new(const lockstep_model* model, const lockstep_sampler_params* params, lockstep_sampler** sampler);
/* Frees the sampler (NULL: nothing). */
LOCKSTEP_API void lockstep_sampler_free(lockstep_sampler* sampler);
/* Starts the sampler over: its grammar at its start (a new generation). */
LOCKSTEP_API int lockstep_sampler_reset(lockstep_sampler* sampler);
/* Picks the token that follows sequence seq from output row i of the session's last decode
 * (negative: from the end). The sequence's tokens are the penalties' history and its length
 * keys the draw, so call it after the decode that evaluated the sequence's last token. The
 * session's logits are not changed. A grammar advances on the token chosen. */
LOCKSTEP_API int lockstep_sampler_sample(lockstep_sampler* sampler, lockstep_session* session, int32_t seq, int32_t i, int32_t* token);
/* The same from logits the caller holds (n_vocab of them, the model's vocabulary; not changed),
 * with `history` (n_history ids) as the penalties' history and the draw keyed by `pos`. */
LOCKSTEP_API int lockstep_sampler_sample_logits(lockstep_sampler* sampler, const float* logits, int32_t n_vocab, const int32_t* history,
                                                int64_t n_history, int64_t pos, int32_t* token);
/* With n_logprobs > 0, after a sample: the chosen token's log-probability (of the logits as
 * given, before bias and penalties) into *chosen, and up to `capacity` of the most likely
 * tokens, most likely first, into ids/logprobs (either may be NULL with capacity 0); *n_top:
 * how many there are (at most n_logprobs). INVALID_ARGUMENT when logprobs are off. */
LOCKSTEP_API int lockstep_sampler_logprobs(const lockstep_sampler* sampler, float* chosen, int32_t* ids, float* logprobs, int32_t capacity,
                                           int32_t* n_top);

/* ---- generation ------------------------------------------------------------------------------ */

/* Called with each generated token and its bytes (control tokens: none); return 0 to go on,
 * nonzero to stop after this token. */
typedef int32_t (*lockstep_token_callback)(void* user_data, int32_t token, const char* piece, int32_t piece_len);

#define LOCKSTEP_END_EOG 0           /* the model wrote an end-of-generation token (not passed on) */
#define LOCKSTEP_END_STOPPED 1       /* the callback asked to stop */
#define LOCKSTEP_END_LIMIT 2         /* n_predict tokens generated */
#define LOCKSTEP_END_CONTEXT_FULL 3  /* no room left in the context */

typedef struct lockstep_generate_result {
    int32_t n_generated;  /* tokens passed to the callback */
    int32_t end_reason;   /* LOCKSTEP_END_* */
    int64_t n_reused;     /* prompt tokens already held by the sequence (lockstep_seq_reuse_prefix) */
    int64_t n_evaluated;  /* prompt tokens evaluated */
} lockstep_generate_result;

/* The loop of the CLI and the server: makes sequence seq hold the prompt (n_prompt tokens; the
 * whole text so far, e.g. a chat transcript), keeping the longest prefix it already holds,
 * then samples up to n_predict tokens (-1: until an end-of-generation token or a full
 * context), calling cb (may be NULL) with each. The sequence holds the prompt and the tokens
 * generated (all but the last, which was not evaluated). The sampler is used as it is (reset
 * it for a grammar's new start). result may be NULL. TOO_LONG for a prompt that leaves no room. */
LOCKSTEP_API int lockstep_generate(lockstep_session* session, lockstep_sampler* sampler, int32_t seq, const int32_t* prompt, int32_t n_prompt,
                                   int32_t n_predict, lockstep_token_callback cb, void* user_data, lockstep_generate_result* result);

/* ---- images ---------------------------------------------------------------------------------- */

/* A model's projector (vision encoder), from the file llama.cpp's converter writes beside the
 * text model (--mmproj; Gemma 3). */
typedef struct lockstep_vision lockstep_vision;
/* Loads the projector at `path` onto `model`'s first device. IO for a missing file, FORMAT for a
 * file that is no projector or whose projector type is not supported, INVALID_ARGUMENT for a
 * projector that is not `model`'s pair (its text architecture or width). */
LOCKSTEP_API int lockstep_vision_load(const char* path, const lockstep_model* model, lockstep_vision** vision);
/* Frees the projector (NULL: nothing). */
LOCKSTEP_API void lockstep_vision_free(lockstep_vision* vision);
/* A prompt with images, made ready to generate from: `text` (text_len bytes; special tokens
 * parsed, a BOS first when add_bos) with each image (n_images PNG or JPEG files' bytes) where
 * the text says <__media__> (without markers: before the text), expanded as the model's
 * processor does; the prompt through its last image is evaluated into sequence seq, keeping
 * what the sequence already holds and encoding only the images past it. Writes the prompt's
 * token ids into ids (capacity of them; *n_ids: how many there are), an image's tokens as its
 * negative tag; give them to lockstep_generate or lockstep_seq_reuse_prefix, which find the
 * images held. *n_encoded (may be NULL): images encoded. FORMAT for an image that does not
 * decode (truncated, corrupt, over 16384 pixels a side or 40M pixels, not PNG or JPEG),
 * INVALID_ARGUMENT for markers that do not match the images, TOO_LONG for a prompt over the
 * context or ids' capacity, or an image larger than the ubatch. */
LOCKSTEP_API int lockstep_vision_prompt(lockstep_vision* vision, lockstep_session* session, int32_t seq, const char* text, size_t text_len,
                                        int32_t add_bos, const uint8_t* const* images, const size_t* image_lens, int32_t n_images,
                                        int32_t* ids, int32_t capacity, int32_t* n_ids, int32_t* n_encoded);

/* ---- chat templates -------------------------------------------------------------------------- */

typedef struct lockstep_chat_params {
    const char* messages_json;    /* a JSON array of OpenAI messages: role, content, tool_calls, ... */
    const char* tools_json;       /* NULL, or a JSON array of {"type": "function", "function": {...}} */
    const char* kwargs_json;      /* NULL, or a JSON object the template sees (enable_thinking, ...) */
    const char* template_source;  /* NULL: the model's own template (else its family's built-in one); or a Jinja source */
    const char* template_name;    /* NULL, or one of the file's named templates (tokenizer.chat_template.<name>) */
    int32_t add_generation_prompt;  /* nonzero: end with the opening of the assistant's turn (1) */
} lockstep_chat_params;

/* The defaults: no messages yet, add_generation_prompt 1, the rest NULL. */
LOCKSTEP_API lockstep_chat_params lockstep_chat_default_params(void);
/* Renders the conversation with the model's chat template into buf (the buffer rule): the
 * prompt text, special tokens as text (tokenize it with parse_special). *add_bos (may be NULL):
 * whether tokenize should add BOS (1: the vocabulary wants one and the text does not begin
 * with it). TEMPLATE for a template that fails, INVALID_ARGUMENT for JSON that does not parse
 * or a named template the file lacks. */
LOCKSTEP_API int lockstep_chat_render(const lockstep_model* model, const lockstep_chat_params* params, char* buf, size_t buf_len,
                                      size_t* n_out, int32_t* add_bos);

/* The tool-call format of a chat: how the template that params picks (template_source and
 * template_name as lockstep_chat_render takes them; the other fields are not read) has the
 * model write a call, as JSON into buf (the buffer rule): {"format": "hermes", "markers":
 * ["<tool_call>", "</tool_call>"], "marker_tokens": [ids], "gives_ids": false}: the format the
 * template writes calls in, else the architecture's own, else "generic" (a JSON reply the
 * model is told of in its first message, as the server does). marker_tokens: the markers this vocabulary holds as control tokens; a
 * reply given to lockstep_chat_parse must carry their text (lockstep_token_piece with
 * render_special), the other tokens' as generated. gives_ids: the model writes the calls' ids
 * itself. TEMPLATE and INVALID_ARGUMENT as for lockstep_chat_render. */
LOCKSTEP_API int lockstep_chat_tool_format(const lockstep_model* model, const lockstep_chat_params* params, char* buf, size_t buf_len,
                                           size_t* n_out);
/* The GBNF grammar (for lockstep_sampler_params.grammar) of a forced tool call in the format
 * params picks: one call of a function of params->tools_json (required), and with `parallel`
 * one or more; or, with `function_name` non-NULL, one call of that function. Each call's
 * arguments follow the function's "parameters" schema. INVALID_ARGUMENT for no tools, tools
 * that are not {"type": "function", "function": {"name": ...}}, or a function_name that is
 * not among them; GRAMMAR for parameters no grammar can enforce. */
LOCKSTEP_API int lockstep_chat_tool_grammar(const lockstep_model* model, const lockstep_chat_params* params, const char* function_name,
                                            int32_t parallel, char* buf, size_t buf_len, size_t* n_out);
/* Reads a whole reply (text_len bytes, with the markers as lockstep_chat_tool_format says) in
 * the tool-call format of the template params picks, with params->tools_json as the declared
 * tools, as the server reads it: JSON into buf (the buffer rule): {"content": text or null,
 * "tool_calls": [{"id": ..., "type": "function", "function": {"name": ..., "arguments":
 * JSON text}}, ...]}, with "reasoning_content" where the format has a reasoning channel
 * (harmony) and the reply used it. Calls get the model's ids where the format gives them,
 * else "call_<index>". A reply whose call breaks the format (arguments that are not JSON, a
 * call that never ends) is its text as content, no calls, and "error": the reason. */
LOCKSTEP_API int lockstep_chat_parse(const lockstep_model* model, const lockstep_chat_params* params, const char* text, size_t text_len, char* buf,
                                     size_t buf_len, size_t* n_out);

/* ---- reading a reply ---------------------------------------------------------------------- */

/* A chat reply read token by token as the server reads one (since version 2): the reasoning
 * split off by the template's markers (<think>...</think>, harmony's analysis channel, Gemma
 * 4's thought channel) into reasoning_content, stop strings matched on the visible text (the
 * text ends before one), and with read_tools nonzero the tool calls of the template's format
 * read out of it (params->tools_json the declared tools; template_source / template_name pick
 * the template as for lockstep_chat_render). stops_json: NULL or a JSON array of strings.
 * call_id_prefix: a call the format gives no id gets prefix + its index (NULL: "call_").
 * INVALID_ARGUMENT for JSON that does not parse or is not an array of strings, TEMPLATE as for
 * lockstep_chat_render. Free with lockstep_reply_reader_free. */
typedef struct lockstep_reply_reader lockstep_reply_reader;
LOCKSTEP_API int lockstep_reply_reader_new(const lockstep_model* model, const lockstep_chat_params* params, int32_t read_tools,
                                          const char* stops_json, const char* call_id_prefix, lockstep_reply_reader** reader);
/* The next generated token (end-of-generation tokens are not given). *stopped (may be NULL):
 * 1 once a stop string matched, after which tokens release nothing. OUT_OF_RANGE for an id
 * outside the vocabulary, INVALID_ARGUMENT after finish. */
LOCKSTEP_API int lockstep_reply_reader_push(lockstep_reply_reader* reader, int32_t token, int32_t* stopped);
/* The reply ended (end of generation, a length limit, a stop): releases what was held back
 * (text that might have begun a marker or a stop string) and checks the calls. Again: nothing. */
LOCKSTEP_API int lockstep_reply_reader_finish(lockstep_reply_reader* reader);
/* The deltas released since the last take, as a JSON array into buf (the buffer rule; on
 * BUFFER_TOO_SMALL they stay for the next call), each an OpenAI chat chunk's delta, in order:
 * {"content": text}, {"reasoning_content": text}, {"tool_calls": [{"index": i, "id": ...,
 * "type": "function", "function": {"name": ..., "arguments": ""}}]} when call i begins, and
 * {"tool_calls": [{"index": i, "function": {"arguments": more}}]} as its arguments come.
 * Adjacent text of one kind is one delta; the text is whole UTF-8 characters. */
LOCKSTEP_API int lockstep_reply_reader_take(lockstep_reply_reader* reader, char* buf, size_t buf_len, size_t* n_out);
/* After finish: the whole reply as a message, JSON into buf: {"content": text or null (null
 * when there are calls and no text), "reasoning_content": text (where any), "tool_calls":
 * [{"id", "type", "function": {"name", "arguments"}}]}; a call that broke the format gives the
 * visible text as content, no calls, and "error": the reason. INVALID_ARGUMENT before finish. */
LOCKSTEP_API int lockstep_reply_reader_message(lockstep_reply_reader* reader, char* buf, size_t buf_len, size_t* n_out);
/* Frees the reader (NULL: nothing). */
LOCKSTEP_API void lockstep_reply_reader_free(lockstep_reply_reader* reader);

#ifdef __cplusplus
}
#endif

#endif /* LOCKSTEP_H */
