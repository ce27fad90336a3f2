/* The C API (include/lockstep.h), every function, through the shared library as a C program
 * sees it: the answers on the tiny models, and the codes and messages for bad input (NULL
 * handles, wrong sizes, ids out of range, a truncated GGUF, damaged or foreign state). Run by
 * CTest (capi) and under ASan + UBSan (tools/scripts/test.sh).
 *
 *   capi_test DATA_DIR TMP_DIR HYBRID.gguf TEMPLATED.gguf TEMPLATE.jinja
 *
 * DATA_DIR: tests/data; HYBRID: the tiny qwen35 with a vocabulary, TEMPLATED: the tiny Gemma 4
 * with tokenizer.chat_template from TEMPLATE (both written by lockstep-make-test-model). */
#include <lockstep.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int n_checks = 0, n_failed = 0;

#define CHECK(cond)                                                                                                  \
    do {                                                                                                             \
        ++n_checks;                                                                                                  \
        if (!(cond)) {                                                                                               \
            ++n_failed;                                                                                              \
            fprintf(stderr, "%s:%d: CHECK(%s) failed (last error: '%s')\n", __FILE__, __LINE__, #cond, lockstep_last_error()); \
        }                                                                                                            \
    } while (0)

/* A call that must succeed. */
#define OK(call)                                                                                                     \
    do {                                                                                                             \
        const int rc_ = (call);                                                                                      \
        ++n_checks;                                                                                                  \
        if (rc_ != LOCKSTEP_OK) {                                                                                    \
            ++n_failed;                                                                                              \
            fprintf(stderr, "%s:%d: %s gave %s: %s\n", __FILE__, __LINE__, #call, lockstep_status_name(rc_), lockstep_last_error()); \
        } else if (lockstep_last_error()[0] != '\0') {                                                               \
            ++n_failed;                                                                                              \
            fprintf(stderr, "%s:%d: %s succeeded but left a message: %s\n", __FILE__, __LINE__, #call, lockstep_last_error()); \
        }                                                                                                            \
    } while (0)

/* A call that must fail with `code` and a message holding `words` (after the function's name). */
#define ERR(call, code, words) expect_err((call), (code), (words), #call, __FILE__, __LINE__)

static void expect_err(int rc, int code, const char* words, const char* call, const char* file, int line) {
    const char* msg = lockstep_last_error();
    ++n_checks;
    if (rc != code || strstr(msg, words) == NULL) {
        ++n_failed;
        fprintf(stderr, "%s:%d: %s gave %s '%s', expected %s with '%s'\n", file, line, call, lockstep_status_name(rc), msg,
                lockstep_status_name(code), words);
    }
}

/* A getter that must fail with -1 and a message holding `words`. */
#define BAD_GET(expr, words)                                                                                         \
    do {                                                                                                             \
        const long long v_ = (long long)(expr);                                                                      \
        expect_err(v_ == -1 ? LOCKSTEP_ERR_INVALID_ARGUMENT : LOCKSTEP_OK, LOCKSTEP_ERR_INVALID_ARGUMENT, (words), #expr, __FILE__, __LINE__); \
    } while (0)

static char data_dir[1024], tmp_dir[1024];

/* (in one of 16 buffers, used in turn: keep a path that must live longer in its own) */
static const char* path_in(const char* dir, const char* name) {
    static char buf[16][2048];
    static int k = 0;
    k = (k + 1) % 16;
    snprintf(buf[k], sizeof buf[k], "%s/%s", dir, name);
    return buf[k];
}

/* The first `keep` bytes of `src` into `dst` (keep < 0: all of it). Returns the bytes copied. */
static long copy_file(const char* src, const char* dst, long keep) {
    FILE* in = fopen(src, "rb");
    FILE* out = fopen(dst, "wb");
    long n = 0;
    int c;
    if (!in || !out) {
        fprintf(stderr, "cannot copy %s to %s\n", src, dst);
        exit(1);
    }
    while ((keep < 0 || n < keep) && (c = fgetc(in)) != EOF) {
        fputc(c, out);
        ++n;
    }
    fclose(in);
    fclose(out);
    return n;
}

static char* read_file(const char* path, size_t* len) {
    FILE* f = fopen(path, "rb");
    char* buf;
    long n;
    if (!f) {
        fprintf(stderr, "cannot read %s\n", path);
        exit(1);
    }
    fseek(f, 0, SEEK_END);
    n = ftell(f);
    fseek(f, 0, SEEK_SET);
    buf = malloc((size_t)n + 1);
    if (fread(buf, 1, (size_t)n, f) != (size_t)n) exit(1);
    buf[n] = '\0';
    fclose(f);
    *len = (size_t)n;
    return buf;
}

static lockstep_model* load(const char* path) {
    lockstep_model* m = NULL;
    OK(lockstep_model_load(path, NULL, &m));
    if (!m) {
        fprintf(stderr, "cannot go on without %s\n", path);
        exit(1);
    }
    return m;
}

static lockstep_session* new_session(lockstep_model* m, int64_t n_ctx, int64_t n_ubatch, int32_t n_seq) {
    lockstep_session_params p = lockstep_session_default_params();
    lockstep_session* s = NULL;
    p.n_ctx = n_ctx;
    p.n_ubatch = n_ubatch;
    p.n_seq = n_seq;
    OK(lockstep_session_new(m, &p, &s));
    if (!s) exit(1);
    return s;
}

static lockstep_sampler* greedy_sampler(const lockstep_model* m) {
    lockstep_sampler_params p = lockstep_sampler_default_params();
    lockstep_sampler* s = NULL;
    p.temp = 0.0f;
    OK(lockstep_sampler_new(m, &p, &s));
    if (!s) exit(1);
    return s;
}

/* Tokenizes into a fixed buffer; returns the count. */
static int32_t tokenize(const lockstep_model* m, const char* text, int32_t add_special, int32_t* out, int32_t cap) {
    int32_t n = 0;
    OK(lockstep_tokenize(m, text, strlen(text), add_special, 1, out, cap, &n));
    return n;
}

static lockstep_batch one_seq(const int32_t* tokens, int32_t n) {
    lockstep_batch b;
    memset(&b, 0, sizeof b);
    b.n_tokens = n;
    b.tokens = tokens;
    return b;
}

static int32_t argmax(const float* v, int64_t n) {
    int32_t best = 0;
    int64_t i;
    for (i = 1; i < n; ++i)
        if (v[i] > v[best]) best = (int32_t)i;
    return best;
}

/* ---- versions, status codes ---- */
static void test_versions(void) {
    int code;
    CHECK(lockstep_api_version() == LOCKSTEP_API_VERSION);
    CHECK(strlen(lockstep_version()) >= 5);
    CHECK(strcmp(lockstep_last_error(), "") == 0);
    CHECK(strcmp(lockstep_status_name(LOCKSTEP_OK), "LOCKSTEP_OK") == 0);
    for (code = LOCKSTEP_ERR_INTERNAL; code <= LOCKSTEP_ERR_INVALID_ARGUMENT; ++code)
        CHECK(strncmp(lockstep_status_name(code), "LOCKSTEP_ERR_", 13) == 0 && strcmp(lockstep_status_name(code), "LOCKSTEP_ERR_UNKNOWN") != 0);
    CHECK(strcmp(lockstep_status_name(LOCKSTEP_ERR_OUT_OF_RANGE), "LOCKSTEP_ERR_OUT_OF_RANGE") == 0);
    CHECK(strcmp(lockstep_status_name(-999), "LOCKSTEP_ERR_UNKNOWN") == 0);
    CHECK(strcmp(lockstep_status_name(1), "LOCKSTEP_ERR_UNKNOWN") == 0);
}

/* ---- loading: bad paths, broken files, bad parameters ---- */
static void test_load_errors(const char* gemma4) {
    lockstep_model* m = (lockstep_model*)&m; /* must come back NULL */
    lockstep_model_params p = lockstep_model_default_params();
    const float shares[2] = {1.0f, -1.0f};
    char half[2048], head[2048];
    long size = copy_file(gemma4, path_in(tmp_dir, "whole.gguf"), -1);
    snprintf(half, sizeof half, "%s", path_in(tmp_dir, "truncated.gguf"));
    snprintf(head, sizeof head, "%s", path_in(tmp_dir, "header_only.gguf"));

    CHECK(strcmp(p.backend, "cpu") == 0 && p.device == 0 && p.n_gpu_layers == -1 && p.split_mode == 1 && p.use_mmap == -1);
    ERR(lockstep_model_load(gemma4, NULL, NULL), LOCKSTEP_ERR_INVALID_ARGUMENT, "lockstep_model_load: model is NULL");
    ERR(lockstep_model_load(NULL, NULL, &m), LOCKSTEP_ERR_INVALID_ARGUMENT, "path is NULL");
    CHECK(m == NULL);
    ERR(lockstep_model_load(path_in(tmp_dir, "no_such.gguf"), NULL, &m), LOCKSTEP_ERR_IO, "model file not found");
    ERR(lockstep_model_load(tmp_dir, NULL, &m), LOCKSTEP_ERR_IO, "not a file");
    /* A GGUF cut in half (its tensor data runs past the end), then one cut inside its header. */
    copy_file(gemma4, half, size / 2);
    ERR(lockstep_model_load(half, NULL, &m), LOCKSTEP_ERR_FORMAT, "");
    CHECK(m == NULL && strlen(lockstep_last_error()) > strlen("lockstep_model_load: "));
    copy_file(gemma4, head, 24);
    ERR(lockstep_model_load(head, NULL, &m), LOCKSTEP_ERR_FORMAT, "");
    ERR(lockstep_model_load(path_in(data_dir, "GPL-3.txt"), NULL, &m), LOCKSTEP_ERR_FORMAT, "");
    CHECK(m == NULL);

    p.backend = "nosuch";
    ERR(lockstep_model_load(gemma4, &p, &m), LOCKSTEP_ERR_INVALID_ARGUMENT, "unknown backend 'nosuch'");
    p = lockstep_model_default_params();
    p.device = -1;
    ERR(lockstep_model_load(gemma4, &p, &m), LOCKSTEP_ERR_INVALID_ARGUMENT, "device must be >= 0");
    p = lockstep_model_default_params();
    p.split_mode = 7;
    ERR(lockstep_model_load(gemma4, &p, &m), LOCKSTEP_ERR_INVALID_ARGUMENT, "split_mode");
    p = lockstep_model_default_params();
    p.use_mmap = 5;
    ERR(lockstep_model_load(gemma4, &p, &m), LOCKSTEP_ERR_INVALID_ARGUMENT, "use_mmap");
    p = lockstep_model_default_params();
    p.n_gpu_layers = -3;
    ERR(lockstep_model_load(gemma4, &p, &m), LOCKSTEP_ERR_INVALID_ARGUMENT, "n_gpu_layers");
    p = lockstep_model_default_params();
    p.n_tensor_split = 2;
    ERR(lockstep_model_load(gemma4, &p, &m), LOCKSTEP_ERR_INVALID_ARGUMENT, "tensor_split");
    p.tensor_split = shares;
    ERR(lockstep_model_load(gemma4, &p, &m), LOCKSTEP_ERR_INVALID_ARGUMENT, "negative");
    p = lockstep_model_default_params();
    p.devices = "cpu,,";
    ERR(lockstep_model_load(gemma4, &p, &m), LOCKSTEP_ERR_INVALID_ARGUMENT, "empty name");
    p.devices = "cpu,nosuch0";
    ERR(lockstep_model_load(gemma4, &p, &m), LOCKSTEP_ERR_INVALID_ARGUMENT, "devices: no device 'nosuch0'");
    p = lockstep_model_default_params();
    p.backend = "reference";
    p.n_gpu_layers = 1;
    ERR(lockstep_model_load(gemma4, &p, &m), LOCKSTEP_ERR_INVALID_ARGUMENT, "reference backend runs alone");
    CHECK(m == NULL);
    lockstep_model_free(NULL);

    /* Explicit parameters that are valid: the CPU, mapped in place; the whole copy of the file. */
    p = lockstep_model_default_params();
    p.backend = NULL;
    p.use_mmap = 1;
    p.n_threads = 2;
    OK(lockstep_model_load(path_in(tmp_dir, "whole.gguf"), &p, &m));
    CHECK(m != NULL && lockstep_model_size(m) == size);
    lockstep_model_free(m);
}

/* ---- what a model is ---- */
static void test_model_info(lockstep_model* m) {
    char buf[256];
    size_t n = 0;
    int32_t i, count, found = 0;
    CHECK(lockstep_model_n_vocab(m) == 320);
    CHECK(lockstep_model_n_ctx_train(m) == 256);
    CHECK(lockstep_model_n_embd(m) == 64);
    CHECK(lockstep_model_n_layer(m) == 6);
    CHECK(lockstep_model_has_logits(m) == 1);
    CHECK(lockstep_model_pooling(m) == LOCKSTEP_POOLING_NONE);
    CHECK(lockstep_model_size(m) > 1000000);
    BAD_GET(lockstep_model_n_vocab(NULL), "lockstep_model_n_vocab: model is NULL");
    BAD_GET(lockstep_model_n_ctx_train(NULL), "model is NULL");
    BAD_GET(lockstep_model_n_embd(NULL), "model is NULL");
    BAD_GET(lockstep_model_n_layer(NULL), "model is NULL");
    BAD_GET(lockstep_model_has_logits(NULL), "model is NULL");
    BAD_GET(lockstep_model_pooling(NULL), "model is NULL");
    BAD_GET(lockstep_model_size(NULL), "model is NULL");
    BAD_GET(lockstep_model_meta_count(NULL), "model is NULL");

    count = lockstep_model_meta_count(m);
    CHECK(count > 20);
    for (i = 0; i < count; ++i) {
        OK(lockstep_model_meta_key(m, i, buf, sizeof buf, &n));
        CHECK(n == strlen(buf));
        found += strcmp(buf, "general.architecture") == 0;
    }
    CHECK(found == 1);
    ERR(lockstep_model_meta_key(m, count, buf, sizeof buf, &n), LOCKSTEP_ERR_OUT_OF_RANGE, "outside");
    ERR(lockstep_model_meta_key(m, -1, buf, sizeof buf, &n), LOCKSTEP_ERR_OUT_OF_RANGE, "outside");
    ERR(lockstep_model_meta_key(NULL, 0, buf, sizeof buf, &n), LOCKSTEP_ERR_INVALID_ARGUMENT, "model is NULL");

    OK(lockstep_model_meta_get(m, "general.architecture", buf, sizeof buf, &n));
    CHECK(n == 6 && strcmp(buf, "gemma4") == 0);
    OK(lockstep_model_meta_get(m, "gemma4.block_count", buf, sizeof buf, &n));
    CHECK(strcmp(buf, "6") == 0);
    OK(lockstep_model_meta_get(m, "gemma4.rope.freq_base", buf, sizeof buf, &n));
    CHECK(strcmp(buf, "1000000") == 0);
    OK(lockstep_model_meta_get(m, "tokenizer.ggml.add_bos_token", buf, sizeof buf, &n));
    CHECK(strcmp(buf, "true") == 0);
    OK(lockstep_model_meta_get(m, "gemma4.attention.sliding_window_pattern", buf, sizeof buf, &n));
    CHECK(strncmp(buf, "[true,true,false,", 17) == 0);
    /* A long array: the size first, then the value. */
    ERR(lockstep_model_meta_get(m, "tokenizer.ggml.tokens", NULL, 0, &n), LOCKSTEP_ERR_BUFFER_TOO_SMALL, "needs");
    CHECK(n > 1000);
    {
        char* all = malloc(n + 1);
        size_t n2 = 0;
        OK(lockstep_model_meta_get(m, "tokenizer.ggml.tokens", all, n + 1, &n2));
        CHECK(n2 == n && all[n] == '\0' && strncmp(all, "[\"<pad>\",\"<eos>\",\"<bos>\"", 24) == 0);
        free(all);
    }
    memset(buf, 'x', sizeof buf);
    ERR(lockstep_model_meta_get(m, "general.architecture", buf, 3, &n), LOCKSTEP_ERR_BUFFER_TOO_SMALL, "needs 6 bytes");
    CHECK(n == 6 && buf[0] == 'x');
    OK(lockstep_model_meta_get(m, "general.architecture", buf, 6, &n)); /* exactly: no NUL */
    CHECK(n == 6 && memcmp(buf, "gemma4", 6) == 0 && buf[6] == 'x');
    ERR(lockstep_model_meta_get(m, "no.such.key", buf, sizeof buf, &n), LOCKSTEP_ERR_NOT_FOUND, "no key 'no.such.key'");
    ERR(lockstep_model_meta_get(m, NULL, buf, sizeof buf, &n), LOCKSTEP_ERR_INVALID_ARGUMENT, "key is NULL");
    ERR(lockstep_model_meta_get(m, "general.architecture", buf, sizeof buf, NULL), LOCKSTEP_ERR_INVALID_ARGUMENT, "n_out is NULL");
    ERR(lockstep_model_meta_get(m, "general.architecture", NULL, 10, &n), LOCKSTEP_ERR_INVALID_ARGUMENT, "buf is NULL");
    ERR(lockstep_model_meta_get(NULL, "general.architecture", buf, sizeof buf, &n), LOCKSTEP_ERR_INVALID_ARGUMENT, "model is NULL");

    ERR(lockstep_model_chat_template(m, NULL, buf, sizeof buf, &n), LOCKSTEP_ERR_NOT_FOUND, "no chat template");
    ERR(lockstep_model_chat_template(NULL, NULL, buf, sizeof buf, &n), LOCKSTEP_ERR_INVALID_ARGUMENT, "model is NULL");
}

/* ---- tokens ---- */
static void test_tokens(lockstep_model* m) {
    int32_t toks[64], toks2[64], n = 0, i, len = 0;
    char buf[256], cat[256];
    size_t nb = 0, at = 0;
    const char* piece = NULL;
    const char* piece2 = NULL;
    const char* text = "the cat sat, in the hat.";

    CHECK(lockstep_token_bos(m) == 2 && lockstep_token_eos(m) == 1 && lockstep_token_eot(m) >= -1);
    CHECK(lockstep_model_add_bos(m) == 1);
    BAD_GET(lockstep_token_bos(NULL), "lockstep_token_bos: model is NULL");
    BAD_GET(lockstep_token_eos(NULL), "model is NULL");
    BAD_GET(lockstep_token_eot(NULL), "model is NULL");
    BAD_GET(lockstep_model_add_bos(NULL), "model is NULL");
    CHECK(lockstep_token_is_eog(m, 1) == 1 && lockstep_token_is_eog(m, 2) == 0);
    CHECK(lockstep_token_is_eog(m, 320) == -1 && strstr(lockstep_last_error(), "token id 320 outside the vocabulary [0, 320)"));
    CHECK(lockstep_token_is_eog(m, -1) == -1 && strstr(lockstep_last_error(), "token id -1 outside"));
    BAD_GET(lockstep_token_is_eog(NULL, 1), "model is NULL");
    CHECK(lockstep_token_type(m, 2) == LOCKSTEP_TOKEN_TYPE_CONTROL && lockstep_token_type(m, 7) == LOCKSTEP_TOKEN_TYPE_BYTE);
    CHECK(lockstep_token_type(m, 300) == LOCKSTEP_TOKEN_TYPE_NORMAL && lockstep_token_type(m, 301) == LOCKSTEP_TOKEN_TYPE_USER_DEFINED);
    CHECK(lockstep_token_type(m, 99999) == -1 && strstr(lockstep_last_error(), "outside the vocabulary"));
    BAD_GET(lockstep_token_type(NULL, 2), "model is NULL");

    /* Tokenize: the size first, then exactly that, then one short. */
    ERR(lockstep_tokenize(m, text, strlen(text), 1, 0, NULL, 0, &n), LOCKSTEP_ERR_BUFFER_TOO_SMALL, "needs room for");
    CHECK(n > 5);
    OK(lockstep_tokenize(m, text, strlen(text), 1, 0, toks, n, &len));
    CHECK(len == n && toks[0] == 2);
    ERR(lockstep_tokenize(m, text, strlen(text), 1, 0, toks2, n - 1, &len), LOCKSTEP_ERR_BUFFER_TOO_SMALL, "needs room for");
    CHECK(len == n);
    OK(lockstep_tokenize(m, text, strlen(text), 0, 0, toks2, 64, &len));
    CHECK(len == n - 1 && memcmp(toks2, toks + 1, sizeof(int32_t) * (size_t)len) == 0);
    OK(lockstep_tokenize(m, "", 0, 1, 0, toks2, 64, &len));
    CHECK(len == 1 && toks2[0] == 2);
    OK(lockstep_tokenize(m, NULL, 0, 0, 0, toks2, 64, &len));
    CHECK(len == 0);
    OK(lockstep_tokenize(m, "<bos>", 5, 0, 1, toks2, 64, &len));
    CHECK(len == 1 && toks2[0] == 2);
    OK(lockstep_tokenize(m, "<bos>", 5, 0, 0, toks2, 64, &len));
    CHECK(len > 1);
    /* Text with a NUL inside it: its length is what counts. */
    OK(lockstep_tokenize(m, "a\0b", 3, 0, 0, toks2, 64, &len));
    CHECK(len == 3);
    ERR(lockstep_tokenize(NULL, text, 3, 1, 0, toks2, 64, &len), LOCKSTEP_ERR_INVALID_ARGUMENT, "lockstep_tokenize: model is NULL");
    ERR(lockstep_tokenize(m, NULL, 3, 1, 0, toks2, 64, &len), LOCKSTEP_ERR_INVALID_ARGUMENT, "text is NULL");
    ERR(lockstep_tokenize(m, text, 3, 1, 0, NULL, 64, &len), LOCKSTEP_ERR_INVALID_ARGUMENT, "tokens is NULL");
    ERR(lockstep_tokenize(m, text, 3, 1, 0, toks2, -1, &len), LOCKSTEP_ERR_INVALID_ARGUMENT, "n_tokens_max is negative");
    ERR(lockstep_tokenize(m, text, 3, 1, 0, toks2, 64, NULL), LOCKSTEP_ERR_INVALID_ARGUMENT, "n_tokens is NULL");

    /* Detokenize: the text back; control tokens shown or not. */
    OK(lockstep_detokenize(m, toks + 1, n - 1, 0, buf, sizeof buf, &nb));
    CHECK(nb == strlen(text) && strcmp(buf, text) == 0);
    OK(lockstep_detokenize(m, toks, n, 1, buf, sizeof buf, &nb));
    CHECK(strncmp(buf, "<bos>", 5) == 0 && strcmp(buf + 5, text) == 0);
    OK(lockstep_detokenize(m, toks, n, 0, buf, sizeof buf, &nb));
    CHECK(strcmp(buf, text) == 0);
    ERR(lockstep_detokenize(m, toks, n, 0, buf, 4, &nb), LOCKSTEP_ERR_BUFFER_TOO_SMALL, "needs");
    CHECK(nb == strlen(text));
    OK(lockstep_detokenize(m, NULL, 0, 0, buf, sizeof buf, &nb));
    CHECK(nb == 0 && buf[0] == '\0');
    toks2[0] = 320;
    ERR(lockstep_detokenize(m, toks2, 1, 0, buf, sizeof buf, &nb), LOCKSTEP_ERR_OUT_OF_RANGE, "token id 320 outside");
    ERR(lockstep_detokenize(m, toks, -1, 0, buf, sizeof buf, &nb), LOCKSTEP_ERR_INVALID_ARGUMENT, "n_tokens is negative");
    ERR(lockstep_detokenize(m, NULL, 2, 0, buf, sizeof buf, &nb), LOCKSTEP_ERR_INVALID_ARGUMENT, "tokens is NULL");
    ERR(lockstep_detokenize(NULL, toks, n, 0, buf, sizeof buf, &nb), LOCKSTEP_ERR_INVALID_ARGUMENT, "model is NULL");

    /* Pieces: exact bytes, no copy, the same pointer every time; they concatenate to the text. */
    for (i = 1; i < n; ++i) {
        OK(lockstep_token_piece(m, toks[i], 0, &piece, &len));
        memcpy(cat + at, piece, (size_t)len);
        at += (size_t)len;
    }
    CHECK(at == strlen(text) && memcmp(cat, text, at) == 0);
    OK(lockstep_token_piece(m, 2, 1, &piece, &len));
    CHECK(len == 5 && memcmp(piece, "<bos>", 5) == 0);
    OK(lockstep_token_piece(m, 2, 0, &piece, &len));
    CHECK(len == 0);
    OK(lockstep_token_piece(m, toks[1], 0, &piece, &len));
    OK(lockstep_token_piece(m, toks[1], 0, &piece2, &len));
    CHECK(piece == piece2);
    OK(lockstep_token_piece(m, 7 + 0xE2, 0, &piece, &len)); /* <0xE2>: one byte of a UTF-8 character */
    CHECK(len == 1 && (unsigned char)piece[0] == 0xE2);
    ERR(lockstep_token_piece(m, 320, 0, &piece, &len), LOCKSTEP_ERR_OUT_OF_RANGE, "token id 320 outside");
    ERR(lockstep_token_piece(m, -5, 0, &piece, &len), LOCKSTEP_ERR_OUT_OF_RANGE, "token id -5 outside");
    ERR(lockstep_token_piece(m, 2, 0, NULL, &len), LOCKSTEP_ERR_INVALID_ARGUMENT, "piece is NULL");
    ERR(lockstep_token_piece(m, 2, 0, &piece, NULL), LOCKSTEP_ERR_INVALID_ARGUMENT, "len is NULL");
    ERR(lockstep_token_piece(NULL, 2, 0, &piece, &len), LOCKSTEP_ERR_INVALID_ARGUMENT, "model is NULL");
}

/* ---- sessions, decode, outputs ---- */
static void test_sessions(lockstep_model* m) {
    lockstep_session_params p = lockstep_session_default_params();
    lockstep_session* s = (lockstep_session*)&p;
    CHECK(p.n_ctx == 4096 && p.n_batch == 2048 && p.n_ubatch == 512 && p.n_seq == 1 && p.type_k == LOCKSTEP_TYPE_F16 &&
          p.type_v == LOCKSTEP_TYPE_F16);
    ERR(lockstep_session_new(NULL, NULL, &s), LOCKSTEP_ERR_INVALID_ARGUMENT, "lockstep_session_new: model is NULL");
    CHECK(s == NULL);
    ERR(lockstep_session_new(m, NULL, NULL), LOCKSTEP_ERR_INVALID_ARGUMENT, "session is NULL");
    p.type_k = 3;
    ERR(lockstep_session_new(m, &p, &s), LOCKSTEP_ERR_INVALID_ARGUMENT, "type_k 3 is not a cache type");
    p = lockstep_session_default_params();
    p.type_v = 12;
    ERR(lockstep_session_new(m, &p, &s), LOCKSTEP_ERR_INVALID_ARGUMENT, "type_v 12");
    p = lockstep_session_default_params();
    p.n_ctx = -1;
    ERR(lockstep_session_new(m, &p, &s), LOCKSTEP_ERR_INVALID_ARGUMENT, "n_ctx");
    p = lockstep_session_default_params();
    p.n_seq = 0;
    ERR(lockstep_session_new(m, &p, &s), LOCKSTEP_ERR_INVALID_ARGUMENT, "sequences must be at least 1");
    p = lockstep_session_default_params();
    p.n_ubatch = 0;
    ERR(lockstep_session_new(m, &p, &s), LOCKSTEP_ERR_INVALID_ARGUMENT, "ubatch size must be at least 1");
    CHECK(s == NULL);
    lockstep_session_free(NULL);

    /* n_ctx 0: the model's training context; larger: clamped to it. */
    OK(lockstep_session_new(m, NULL, &s));
    CHECK(lockstep_session_n_ctx(s) == 256 && lockstep_session_n_ubatch(s) == 256 && lockstep_session_n_seq(s) == 1);
    lockstep_session_free(s);
    s = new_session(m, 0, 16, 2);
    CHECK(lockstep_session_n_ctx(s) == 256 && lockstep_session_n_ubatch(s) == 16 && lockstep_session_n_seq(s) == 2);
    lockstep_session_free(s);
    BAD_GET(lockstep_session_n_ctx(NULL), "session is NULL");
    BAD_GET(lockstep_session_n_ubatch(NULL), "session is NULL");
    BAD_GET(lockstep_session_n_seq(NULL), "session is NULL");
}

static void test_decode(lockstep_model* m) {
    lockstep_session_params p = lockstep_session_default_params();
    lockstep_session* s = NULL;
    lockstep_batch b;
    int32_t prompt[64], n, toks[40], seqs[40], pos[40], i, rows = 0;
    int8_t flags[40];
    const float *row = NULL, *row2 = NULL, *all = NULL;
    float* solo;
    int64_t row_len = 0;
    const int64_t n_vocab = lockstep_model_n_vocab(m);

    p.n_ctx = 64;
    p.n_batch = 32;
    p.n_ubatch = 8;
    p.n_seq = 3;
    OK(lockstep_session_new(m, &p, &s));
    n = tokenize(m, "the cat", 1, prompt, 64);
    CHECK(n <= 16);

    /* Refused before anything runs: every sequence stays empty. */
    ERR(lockstep_decode(s, NULL), LOCKSTEP_ERR_INVALID_ARGUMENT, "batch is NULL");
    ERR(lockstep_decode(NULL, NULL), LOCKSTEP_ERR_INVALID_ARGUMENT, "session is NULL");
    b = one_seq(prompt, 0);
    ERR(lockstep_decode(s, &b), LOCKSTEP_ERR_INVALID_ARGUMENT, "the batch has 0 tokens");
    b = one_seq(NULL, 3);
    ERR(lockstep_decode(s, &b), LOCKSTEP_ERR_INVALID_ARGUMENT, "batch->tokens is NULL");
    for (i = 0; i < 40; ++i) toks[i] = 100 + i % 20;
    b = one_seq(toks, 33);
    ERR(lockstep_decode(s, &b), LOCKSTEP_ERR_TOO_LONG, "more than the session's n_batch of 32");
    toks[3] = 320;
    b = one_seq(toks, 5);
    ERR(lockstep_decode(s, &b), LOCKSTEP_ERR_OUT_OF_RANGE, "token id 320 outside the vocabulary [0, 320)");
    toks[3] = -7;
    ERR(lockstep_decode(s, &b), LOCKSTEP_ERR_OUT_OF_RANGE, "token id -7 outside");
    toks[3] = 100;
    for (i = 0; i < 5; ++i) seqs[i] = i == 4 ? 3 : 0;
    b.seq_id = seqs;
    ERR(lockstep_decode(s, &b), LOCKSTEP_ERR_OUT_OF_RANGE, "sequence 3 outside [0, 3)");
    seqs[4] = -1;
    ERR(lockstep_decode(s, &b), LOCKSTEP_ERR_OUT_OF_RANGE, "sequence -1 outside");
    for (i = 0; i < 5; ++i) pos[i] = i == 2 ? 7 : i;
    b.seq_id = NULL;
    b.pos = pos;
    ERR(lockstep_decode(s, &b), LOCKSTEP_ERR_INVALID_ARGUMENT, "is at position 7, but the sequence continues at 2");
    CHECK(lockstep_seq_len(s, 0) == 0 && lockstep_seq_len(s, 1) == 0 && lockstep_seq_len(s, 2) == 0);
    ERR(lockstep_get_logits(s, 0, &row), LOCKSTEP_ERR_OUT_OF_RANGE, "outside the last decode's 0 rows");

    /* The prompt: one output row, the last token's. */
    b = one_seq(prompt, n);
    OK(lockstep_decode(s, &b));
    CHECK(lockstep_seq_len(s, 0) == n);
    OK(lockstep_get_outputs(s, &all, &rows, &row_len));
    CHECK(rows == 1 && row_len == n_vocab);
    OK(lockstep_get_logits(s, 0, &row));
    OK(lockstep_get_logits(s, -1, &row2));
    CHECK(row == all && row2 == all);
    solo = malloc(sizeof(float) * (size_t)n_vocab);
    memcpy(solo, row, sizeof(float) * (size_t)n_vocab);
    ERR(lockstep_get_logits(s, 1, &row), LOCKSTEP_ERR_OUT_OF_RANGE, "output row 1 outside the last decode's 1 rows");
    ERR(lockstep_get_logits(s, -2, &row), LOCKSTEP_ERR_OUT_OF_RANGE, "output row -2");
    ERR(lockstep_get_logits(s, 0, NULL), LOCKSTEP_ERR_INVALID_ARGUMENT, "logits is NULL");
    ERR(lockstep_get_logits(NULL, 0, &row), LOCKSTEP_ERR_INVALID_ARGUMENT, "session is NULL");
    ERR(lockstep_get_hidden(s, 0, &row), LOCKSTEP_ERR_INVALID_ARGUMENT, "the last decode gave logits");
    ERR(lockstep_get_outputs(s, NULL, &rows, &row_len), LOCKSTEP_ERR_INVALID_ARGUMENT, "rows is NULL");
    ERR(lockstep_get_outputs(s, &all, NULL, &row_len), LOCKSTEP_ERR_INVALID_ARGUMENT, "n_rows is NULL");
    ERR(lockstep_get_outputs(s, &all, &rows, NULL), LOCKSTEP_ERR_INVALID_ARGUMENT, "row_len is NULL");
    ERR(lockstep_get_outputs(NULL, &all, &rows, &row_len), LOCKSTEP_ERR_INVALID_ARGUMENT, "session is NULL");
    /* The same prompt in sequences 1 and 2 in one batch, interleaved, with explicit positions
     * and flags: each sequence's last row is the same bits as the prompt's alone. */
    for (i = 0; i < 2 * n; ++i) {
        toks[i] = prompt[i / 2];
        seqs[i] = 1 + i % 2;
        pos[i] = i / 2;
        flags[i] = (int8_t)(i / 2 == n - 1 || i == 3);
    }
    b = one_seq(toks, 2 * n);
    b.seq_id = seqs;
    b.pos = pos;
    b.logits = flags;
    OK(lockstep_decode(s, &b));
    OK(lockstep_get_outputs(s, &all, &rows, &row_len));
    CHECK(rows == 3);
    OK(lockstep_get_logits(s, 1, &row));
    CHECK(memcmp(row, solo, sizeof(float) * (size_t)n_vocab) == 0);
    OK(lockstep_get_logits(s, 2, &row));
    CHECK(memcmp(row, solo, sizeof(float) * (size_t)n_vocab) == 0);
    CHECK(lockstep_seq_len(s, 1) == n && lockstep_seq_len(s, 2) == n);

    /* Hidden states: n_embd floats a row. */
    b = one_seq(prompt, 3);
    OK(lockstep_session_reset(s));
    OK(lockstep_decode_hidden(s, &b));
    OK(lockstep_get_outputs(s, &all, &rows, &row_len));
    CHECK(rows == 1 && row_len == 64);
    OK(lockstep_get_hidden(s, -1, &row));
    CHECK(row == all);
    ERR(lockstep_get_logits(s, 0, &row), LOCKSTEP_ERR_INVALID_ARGUMENT, "the last decode gave hidden states");
    ERR(lockstep_get_hidden(s, 0, NULL), LOCKSTEP_ERR_INVALID_ARGUMENT, "hidden is NULL");
    ERR(lockstep_get_hidden(NULL, 0, &row), LOCKSTEP_ERR_INVALID_ARGUMENT, "session is NULL");
    ERR(lockstep_decode_hidden(s, NULL), LOCKSTEP_ERR_INVALID_ARGUMENT, "batch is NULL");
    ERR(lockstep_decode_hidden(NULL, &b), LOCKSTEP_ERR_INVALID_ARGUMENT, "session is NULL");
    free(solo);
    lockstep_session_free(s);
}

/* ---- greedy generation: the loop, a loop written here, and the sampler agree ---- */
typedef struct {
    int32_t tokens[64];
    int32_t n;
    int32_t stop_after;  /* > 0: stop once this many came */
    char text[1024];
    size_t text_len;
} collected;

static int32_t collect(void* user, int32_t token, const char* piece, int32_t len) {
    collected* c = (collected*)user;
    c->tokens[c->n++] = token;
    memcpy(c->text + c->text_len, piece, (size_t)len);
    c->text_len += (size_t)len;
    c->text[c->text_len] = '\0';
    return c->stop_after > 0 && c->n >= c->stop_after;
}

static void test_generate(lockstep_model* m) {
    lockstep_session* s = new_session(m, 64, 8, 3);
    lockstep_sampler* g = greedy_sampler(m);
    lockstep_generate_result r;
    lockstep_batch b;
    collected c, c2;
    int32_t prompt[64], manual[64], sampled[64], n, k, n_manual = 0, n_sampled = 0, t = 0, bad[2] = {5, 320};
    const float* row = NULL;
    const int32_t N = 16;

    n = tokenize(m, "the cat sat", 1, prompt, 64);
    /* Sequence 0 by hand: decode, argmax, decode it, ... (up to an end-of-generation token). */
    b = one_seq(prompt, n);
    b.seq_id = NULL;
    OK(lockstep_decode(s, &b));
    for (k = 0; k < N; ++k) {
        OK(lockstep_get_logits(s, -1, &row));
        t = argmax(row, lockstep_model_n_vocab(m));
        if (lockstep_token_is_eog(m, t)) break;
        manual[n_manual++] = t;
        if (k + 1 == N) break;
        b = one_seq(&t, 1);
        OK(lockstep_decode(s, &b));
    }
    /* Sequence 1 with the greedy sampler over the session's rows. */
    {
        int32_t seq1[64];
        int32_t i;
        for (i = 0; i < n; ++i) seq1[i] = 1;
        b = one_seq(prompt, n);
        b.seq_id = seq1;
        OK(lockstep_decode(s, &b));
        for (k = 0; k < N; ++k) {
            OK(lockstep_sampler_sample(g, s, 1, -1, &t));
            if (lockstep_token_is_eog(m, t)) break;
            sampled[n_sampled++] = t;
            if (k + 1 == N) break;
            b = one_seq(&t, 1);
            b.seq_id = seq1;
            OK(lockstep_decode(s, &b));
        }
    }
    CHECK(n_manual >= 4); /* (the comparisons below need tokens to compare) */
    CHECK(n_sampled == n_manual && memcmp(sampled, manual, sizeof(int32_t) * (size_t)n_manual) == 0);
    /* Sequence 2 with the generation loop. */
    memset(&c, 0, sizeof c);
    OK(lockstep_generate(s, g, 2, prompt, n, N, collect, &c, &r));
    CHECK(c.n == n_manual && memcmp(c.tokens, manual, sizeof(int32_t) * (size_t)n_manual) == 0);
    CHECK(r.n_generated == c.n && r.n_reused == 0 && r.n_evaluated == n);
    CHECK(r.end_reason == (n_manual == N ? LOCKSTEP_END_LIMIT : LOCKSTEP_END_EOG));
    CHECK(lockstep_seq_len(s, 2) == n + c.n - (r.end_reason == LOCKSTEP_END_LIMIT ? 1 : 0));
    /* The text handed on is the tokens' pieces. */
    {
        char buf[1024];
        size_t nb = 0;
        OK(lockstep_detokenize(m, c.tokens, c.n, 0, buf, sizeof buf, &nb));
        CHECK(nb == c.text_len && memcmp(buf, c.text, nb) == 0);
    }
    /* Again: the prompt is held (all but its last token reused where the ring allows it), the
     * same tokens follow; a callback that stops after 3; n_predict 2; no callback. */
    memset(&c2, 0, sizeof c2);
    OK(lockstep_generate(s, g, 2, prompt, n, N, collect, &c2, &r));
    CHECK(c2.n == c.n && memcmp(c2.tokens, c.tokens, sizeof(int32_t) * (size_t)c.n) == 0);
    CHECK(r.n_reused + r.n_evaluated == n && r.n_reused <= n - 1);
    memset(&c2, 0, sizeof c2);
    c2.stop_after = 3;
    OK(lockstep_generate(s, g, 2, prompt, n, N, collect, &c2, &r));
    CHECK((c2.n == 3 && r.end_reason == LOCKSTEP_END_STOPPED) || (n_manual < 3 && r.end_reason == LOCKSTEP_END_EOG));
    CHECK(memcmp(c2.tokens, manual, sizeof(int32_t) * (size_t)c2.n) == 0);
    OK(lockstep_generate(s, g, 2, prompt, n, 2, NULL, NULL, &r));
    CHECK(r.n_generated == (n_manual < 2 ? n_manual : 2));
    OK(lockstep_generate(s, g, 0, prompt, n, -1, NULL, NULL, NULL));
    CHECK(lockstep_seq_len(s, 0) <= 64);
    /* A context the prompt fills: no room. */
    {
        lockstep_session* small = new_session(m, 8, 8, 1);
        int32_t eight[8] = {2, 300, 301, 302, 303, 304, 305, 306};
        ERR(lockstep_generate(small, g, 0, eight, 8, 4, NULL, NULL, &r), LOCKSTEP_ERR_TOO_LONG, "leaves no room in the context of 8");
        OK(lockstep_generate(small, g, 0, eight, 6, -1, NULL, NULL, &r));
        CHECK(r.end_reason == LOCKSTEP_END_CONTEXT_FULL || r.end_reason == LOCKSTEP_END_EOG);
        CHECK(r.n_generated <= 3 && lockstep_seq_len(small, 0) <= 8);
        lockstep_session_free(small);
    }
    /* Refusals, each before anything is evaluated. */
    k = (int32_t)lockstep_seq_len(s, 1);
    ERR(lockstep_generate(NULL, g, 0, prompt, n, 4, NULL, NULL, &r), LOCKSTEP_ERR_INVALID_ARGUMENT, "lockstep_generate: session is NULL");
    ERR(lockstep_generate(s, NULL, 0, prompt, n, 4, NULL, NULL, &r), LOCKSTEP_ERR_INVALID_ARGUMENT, "sampler is NULL");
    ERR(lockstep_generate(s, g, 3, prompt, n, 4, NULL, NULL, &r), LOCKSTEP_ERR_OUT_OF_RANGE, "sequence 3 outside [0, 3)");
    ERR(lockstep_generate(s, g, 0, prompt, 0, 4, NULL, NULL, &r), LOCKSTEP_ERR_INVALID_ARGUMENT, "the prompt has 0 tokens");
    ERR(lockstep_generate(s, g, 0, NULL, 3, 4, NULL, NULL, &r), LOCKSTEP_ERR_INVALID_ARGUMENT, "prompt is NULL");
    ERR(lockstep_generate(s, g, 0, prompt, n, 0, NULL, NULL, &r), LOCKSTEP_ERR_INVALID_ARGUMENT, "n_predict is 0");
    ERR(lockstep_generate(s, g, 1, bad, 2, 4, NULL, NULL, &r), LOCKSTEP_ERR_OUT_OF_RANGE, "token id 320 outside");
    CHECK(lockstep_seq_len(s, 1) == k);
    lockstep_sampler_free(g);
    lockstep_session_free(s);
}

/* ---- sequence edits ---- */
static void test_sequences(lockstep_model* m) {
    lockstep_session* s = new_session(m, 64, 8, 3);
    lockstep_batch b;
    int32_t toks[48], prompt[64], n, i, taken = 7;
    const int32_t* held = NULL;
    int64_t nh = 0, kept = 0;

    for (i = 0; i < 48; ++i) toks[i] = 260 + (i * 7) % 50;
    b = one_seq(toks, 6);
    OK(lockstep_decode(s, &b));
    OK(lockstep_seq_tokens(s, 0, &held, &nh));
    CHECK(nh == 6 && memcmp(held, toks, 6 * sizeof(int32_t)) == 0);
    ERR(lockstep_seq_tokens(s, 3, &held, &nh), LOCKSTEP_ERR_OUT_OF_RANGE, "sequence 3 outside [0, 3)");
    ERR(lockstep_seq_tokens(s, 0, NULL, &nh), LOCKSTEP_ERR_INVALID_ARGUMENT, "tokens is NULL");
    ERR(lockstep_seq_tokens(s, 0, &held, NULL), LOCKSTEP_ERR_INVALID_ARGUMENT, "n is NULL");
    ERR(lockstep_seq_tokens(NULL, 0, &held, &nh), LOCKSTEP_ERR_INVALID_ARGUMENT, "session is NULL");
    CHECK(lockstep_seq_len(s, 3) == -1 && strstr(lockstep_last_error(), "sequence 3 outside"));
    CHECK(lockstep_seq_len(s, -1) == -1);
    BAD_GET(lockstep_seq_len(NULL, 0), "session is NULL");

    /* seq_rm inside the ring, past the end (nothing), negative, out of range. */
    OK(lockstep_seq_rm(s, 0, 4));
    CHECK(lockstep_seq_len(s, 0) == 4);
    OK(lockstep_seq_rm(s, 0, 100));
    CHECK(lockstep_seq_len(s, 0) == 4);
    ERR(lockstep_seq_rm(s, 0, -1), LOCKSTEP_ERR_OUT_OF_RANGE, "position -1 is negative");
    ERR(lockstep_seq_rm(s, 5, 0), LOCKSTEP_ERR_OUT_OF_RANGE, "sequence 5 outside");
    ERR(lockstep_seq_rm(NULL, 0, 0), LOCKSTEP_ERR_INVALID_ARGUMENT, "session is NULL");
    /* 44 tokens: the windowed rings (8 + ubatch 8 rows) have moved on; back to 5 is refused,
     * changing nothing; back to 0 always works. */
    b = one_seq(toks + 4, 40);
    OK(lockstep_decode(s, &b));
    CHECK(lockstep_seq_len(s, 0) == 44);
    ERR(lockstep_seq_rm(s, 0, 5), LOCKSTEP_ERR_UNSUPPORTED, "cannot return to position 5");
    CHECK(lockstep_seq_len(s, 0) == 44);
    OK(lockstep_seq_rm(s, 0, 40));
    CHECK(lockstep_seq_len(s, 0) == 40);

    /* seq_cp: whole, and a point the ring no longer holds. */
    OK(lockstep_seq_cp(s, 0, 1, -1));
    OK(lockstep_seq_tokens(s, 1, &held, &nh));
    CHECK(nh == 40 && memcmp(held, toks, 40 * sizeof(int32_t)) == 0);
    ERR(lockstep_seq_cp(s, 0, 2, 3), LOCKSTEP_ERR_UNSUPPORTED, "cannot be copied up to position 3");
    CHECK(lockstep_seq_len(s, 2) == 0);
    ERR(lockstep_seq_cp(s, 0, 3, -1), LOCKSTEP_ERR_OUT_OF_RANGE, "sequence 3 outside");
    ERR(lockstep_seq_cp(s, -1, 1, -1), LOCKSTEP_ERR_OUT_OF_RANGE, "sequence -1 outside");
    ERR(lockstep_seq_cp(NULL, 0, 1, -1), LOCKSTEP_ERR_INVALID_ARGUMENT, "session is NULL");
    OK(lockstep_seq_cp(s, 0, 2, -1));

    /* seq_keep, reset. */
    OK(lockstep_seq_keep(s, 1));
    CHECK(lockstep_seq_len(s, 0) == 0 && lockstep_seq_len(s, 1) == 40 && lockstep_seq_len(s, 2) == 0);
    ERR(lockstep_seq_keep(s, 9), LOCKSTEP_ERR_OUT_OF_RANGE, "sequence 9 outside");
    ERR(lockstep_seq_keep(NULL, 0), LOCKSTEP_ERR_INVALID_ARGUMENT, "session is NULL");
    OK(lockstep_session_reset(s));
    CHECK(lockstep_seq_len(s, 1) == 0);
    OK(lockstep_seq_tokens(s, 1, &held, &nh));
    CHECK(nh == 0);
    ERR(lockstep_session_reset(NULL), LOCKSTEP_ERR_INVALID_ARGUMENT, "session is NULL");

    /* reuse_prefix: a prompt that continues what is held keeps all of it; the same prompt all
     * but its last token; another prompt nothing. */
    n = tokenize(m, "the cat sat", 1, prompt, 60);
    b = one_seq(prompt, n);
    OK(lockstep_decode(s, &b));
    prompt[n] = 300;
    OK(lockstep_seq_reuse_prefix(s, 0, prompt, n + 1, &kept));
    CHECK(kept == n && lockstep_seq_len(s, 0) == n);
    OK(lockstep_seq_reuse_prefix(s, 0, prompt, n, &kept));
    CHECK(kept == n - 1 && lockstep_seq_len(s, 0) == n - 1);
    OK(lockstep_seq_reuse_prefix(s, 0, toks, 5, &kept));
    CHECK(kept == 0 && lockstep_seq_len(s, 0) == 0);
    OK(lockstep_seq_reuse_prefix(s, 0, NULL, 0, &kept));
    CHECK(kept == 0);
    ERR(lockstep_seq_reuse_prefix(s, 0, NULL, 3, &kept), LOCKSTEP_ERR_INVALID_ARGUMENT, "prompt is NULL");
    ERR(lockstep_seq_reuse_prefix(s, 0, prompt, -1, &kept), LOCKSTEP_ERR_INVALID_ARGUMENT, "n is negative");
    ERR(lockstep_seq_reuse_prefix(s, 0, prompt, n, NULL), LOCKSTEP_ERR_INVALID_ARGUMENT, "kept is NULL");
    ERR(lockstep_seq_reuse_prefix(s, 4, prompt, n, &kept), LOCKSTEP_ERR_OUT_OF_RANGE, "sequence 4 outside");
    ERR(lockstep_seq_reuse_prefix(NULL, 0, prompt, n, &kept), LOCKSTEP_ERR_INVALID_ARGUMENT, "session is NULL");

    /* No recurrent layers: no checkpoint needed. */
    OK(lockstep_seq_checkpoint(s, 0, &taken));
    CHECK(taken == 0);
    OK(lockstep_seq_checkpoint(s, 0, NULL));
    ERR(lockstep_seq_checkpoint(s, 3, &taken), LOCKSTEP_ERR_OUT_OF_RANGE, "sequence 3 outside");
    ERR(lockstep_seq_checkpoint(NULL, 0, &taken), LOCKSTEP_ERR_INVALID_ARGUMENT, "session is NULL");
    lockstep_session_free(s);
}

/* Decodes `token` at the end of sequence seq and copies its logits into out. */
static void next_logits(lockstep_session* s, int32_t seq, int32_t token, float* out, int64_t n_vocab) {
    lockstep_batch b = one_seq(&token, 1);
    const float* row = NULL;
    b.seq_id = &seq;
    OK(lockstep_decode(s, &b));
    OK(lockstep_get_logits(s, -1, &row));
    if (row) memcpy(out, row, sizeof(float) * (size_t)n_vocab);
}

/* ---- a sequence's state ---- */
static void test_state(lockstep_model* m, lockstep_model* other) {
    lockstep_session* s = new_session(m, 64, 8, 2);
    lockstep_session *t, *u;
    lockstep_batch b;
    lockstep_session_params p;
    int32_t toks[44], i;
    size_t size = 0, n = 0, i2;
    uint8_t *state, *bad;
    const int64_t V = lockstep_model_n_vocab(m);
    float *want = malloc(sizeof(float) * (size_t)V), *got = malloc(sizeof(float) * (size_t)V);
    const int32_t* held = NULL;
    int64_t nh = 0;
    const char* file = path_in(tmp_dir, "seq.state");

    for (i = 0; i < 44; ++i) toks[i] = 260 + (i * 11) % 50;
    /* 40 tokens in sequence 1 (its windowed rings wrapped), then the logits of one more. */
    b = one_seq(toks, 20);
    {
        int32_t ones[20];
        for (i = 0; i < 20; ++i) ones[i] = 1;
        b.seq_id = ones;
        OK(lockstep_decode(s, &b));
        b.tokens = toks + 20;
        OK(lockstep_decode(s, &b));
    }
    OK(lockstep_state_seq_size(s, 1, &size));
    CHECK(size > 40 * 4);
    ERR(lockstep_state_seq_save(s, 1, NULL, 0, &n), LOCKSTEP_ERR_BUFFER_TOO_SMALL, "needs");
    CHECK(n == size);
    state = malloc(size + 1);
    ERR(lockstep_state_seq_save(s, 1, state, size - 1, &n), LOCKSTEP_ERR_BUFFER_TOO_SMALL, "needs");
    OK(lockstep_state_seq_save(s, 1, state, size, &n));
    CHECK(n == size);
    OK(lockstep_state_seq_save_file(s, 1, file));
    next_logits(s, 1, toks[40], want, V);

    /* Into a session of another context and ubatch (smaller windowed rings), sequence 0, from
     * bytes; and into one like the first from the file: the same logits follow. */
    t = new_session(m, 128, 4, 1);
    OK(lockstep_state_seq_load(t, 0, state, size));
    CHECK(lockstep_seq_len(t, 0) == 40);
    OK(lockstep_seq_tokens(t, 0, &held, &nh));
    CHECK(nh == 40 && memcmp(held, toks, 40 * sizeof(int32_t)) == 0);
    next_logits(t, 0, toks[40], got, V);
    CHECK(memcmp(want, got, sizeof(float) * (size_t)V) == 0);
    u = new_session(m, 64, 8, 2);
    OK(lockstep_state_seq_load_file(u, 0, file));
    next_logits(u, 0, toks[40], got, V);
    CHECK(memcmp(want, got, sizeof(float) * (size_t)V) == 0);
    /* After a load the ring still refuses what it cannot do. */
    ERR(lockstep_seq_rm(u, 0, 3), LOCKSTEP_ERR_UNSUPPORTED, "cannot return");

    /* Refused, changing nothing: damaged, truncated, longer, another model, other types. */
    bad = malloc(size + 1);
    memcpy(bad, state, size);
    bad[0] = 'X';
    ERR(lockstep_state_seq_load(u, 1, bad, size), LOCKSTEP_ERR_FORMAT, "not a lockstep sequence state");
    ERR(lockstep_state_seq_load(u, 1, state, size - 1), LOCKSTEP_ERR_FORMAT, "truncated");
    ERR(lockstep_state_seq_load(u, 1, state, 10), LOCKSTEP_ERR_FORMAT, "truncated");
    ERR(lockstep_state_seq_load(u, 1, state, 0), LOCKSTEP_ERR_FORMAT, "truncated");
    memcpy(bad, state, size);
    bad[size] = 0;
    ERR(lockstep_state_seq_load(u, 1, bad, size + 1), LOCKSTEP_ERR_FORMAT, "1 bytes after its end");
    for (i2 = 12; i2 < 20; ++i2) bad[i2] ^= 0x5a; /* the model hash */
    ERR(lockstep_state_seq_load(u, 1, bad, size), LOCKSTEP_ERR_FORMAT, "saved from another model");
    memcpy(bad, state, size);
    bad[56] = 0x7f; /* the first token id (after 56 bytes of header) */
    bad[57] = 0x7f;
    ERR(lockstep_state_seq_load(u, 1, bad, size), LOCKSTEP_ERR_FORMAT, "outside the vocabulary");
    CHECK(lockstep_seq_len(u, 1) == 0 && lockstep_seq_len(u, 0) == 41);
    {
        lockstep_session* tiny = new_session(m, 32, 8, 1);
        lockstep_session* foreign = new_session(other, 64, 8, 1);
        lockstep_session* q8;
        ERR(lockstep_state_seq_load(tiny, 0, state, size), LOCKSTEP_ERR_TOO_LONG, "40 tokens, more than the context of 32");
        ERR(lockstep_state_seq_load(foreign, 0, state, size), LOCKSTEP_ERR_FORMAT, "saved from another model");
        p = lockstep_session_default_params();
        p.n_ctx = 64;
        p.type_k = LOCKSTEP_TYPE_Q8_0;
        OK(lockstep_session_new(m, &p, &q8));
        ERR(lockstep_state_seq_load(q8, 0, state, size), LOCKSTEP_ERR_FORMAT, "saved with K/V cache types f16/f16, this session has q8_0/f16");
        CHECK(lockstep_seq_len(tiny, 0) == 0 && lockstep_seq_len(foreign, 0) == 0 && lockstep_seq_len(q8, 0) == 0);
        lockstep_session_free(q8);
        lockstep_session_free(foreign);
        lockstep_session_free(tiny);
    }
    ERR(lockstep_state_seq_load(u, 2, state, size), LOCKSTEP_ERR_OUT_OF_RANGE, "sequence 2 outside");
    ERR(lockstep_state_seq_load(u, 0, NULL, size), LOCKSTEP_ERR_INVALID_ARGUMENT, "buf is NULL");
    ERR(lockstep_state_seq_load(NULL, 0, state, size), LOCKSTEP_ERR_INVALID_ARGUMENT, "session is NULL");
    ERR(lockstep_state_seq_size(s, 2, &size), LOCKSTEP_ERR_OUT_OF_RANGE, "sequence 2 outside");
    ERR(lockstep_state_seq_size(s, 0, NULL), LOCKSTEP_ERR_INVALID_ARGUMENT, "n_bytes is NULL");
    ERR(lockstep_state_seq_size(NULL, 0, &size), LOCKSTEP_ERR_INVALID_ARGUMENT, "session is NULL");
    ERR(lockstep_state_seq_save(s, 2, state, size, &n), LOCKSTEP_ERR_OUT_OF_RANGE, "sequence 2 outside");
    ERR(lockstep_state_seq_save(s, 0, state, size, NULL), LOCKSTEP_ERR_INVALID_ARGUMENT, "n_out is NULL");
    ERR(lockstep_state_seq_save(NULL, 0, state, size, &n), LOCKSTEP_ERR_INVALID_ARGUMENT, "session is NULL");
    ERR(lockstep_state_seq_save_file(s, 0, "/nonexistent/dir/x.state"), LOCKSTEP_ERR_IO, "cannot write /nonexistent/dir/x.state");
    ERR(lockstep_state_seq_save_file(s, 0, NULL), LOCKSTEP_ERR_INVALID_ARGUMENT, "path is NULL");
    ERR(lockstep_state_seq_save_file(s, 5, file), LOCKSTEP_ERR_OUT_OF_RANGE, "sequence 5 outside");
    ERR(lockstep_state_seq_save_file(NULL, 0, file), LOCKSTEP_ERR_INVALID_ARGUMENT, "session is NULL");
    ERR(lockstep_state_seq_load_file(u, 1, path_in(tmp_dir, "no_such.state")), LOCKSTEP_ERR_IO, "cannot read");
    ERR(lockstep_state_seq_load_file(u, 1, path_in(data_dir, "GPL-3.txt")), LOCKSTEP_ERR_FORMAT, "not a lockstep sequence state");
    ERR(lockstep_state_seq_load_file(u, 1, NULL), LOCKSTEP_ERR_INVALID_ARGUMENT, "path is NULL");
    ERR(lockstep_state_seq_load_file(u, 7, file), LOCKSTEP_ERR_OUT_OF_RANGE, "sequence 7 outside");
    ERR(lockstep_state_seq_load_file(NULL, 0, file), LOCKSTEP_ERR_INVALID_ARGUMENT, "session is NULL");
    /* An empty sequence saves and loads too. */
    OK(lockstep_state_seq_size(s, 0, &size));
    OK(lockstep_state_seq_save(s, 0, bad, size, &n));
    OK(lockstep_state_seq_load(u, 0, bad, n));
    CHECK(lockstep_seq_len(u, 0) == 0);
    free(bad);
    free(state);
    free(want);
    free(got);
    lockstep_session_free(u);
    lockstep_session_free(t);
    lockstep_session_free(s);
}

/* ---- a model with recurrent layers: checkpoints, the edits it refuses, its state ---- */
static void test_hybrid(lockstep_model* h) {
    lockstep_session* s = new_session(h, 64, 8, 2);
    lockstep_session* t = new_session(h, 64, 8, 1);
    lockstep_batch b;
    int32_t toks[16], i, taken = 0;
    size_t size = 0, n = 0;
    uint8_t* state;
    const int64_t V = lockstep_model_n_vocab(h);
    float *want = malloc(sizeof(float) * (size_t)V), *got = malloc(sizeof(float) * (size_t)V);

    for (i = 0; i < 16; ++i) toks[i] = 10 + (i * 13) % 200;
    b = one_seq(toks, 10);
    OK(lockstep_decode(s, &b));
    OK(lockstep_seq_checkpoint(s, 0, &taken));
    CHECK(taken == 1);
    b = one_seq(toks + 10, 3);
    OK(lockstep_decode(s, &b));
    ERR(lockstep_seq_rm(s, 0, 5), LOCKSTEP_ERR_UNSUPPORTED, "cannot return to position 5");
    CHECK(lockstep_seq_len(s, 0) == 13);
    ERR(lockstep_seq_cp(s, 0, 1, 4), LOCKSTEP_ERR_UNSUPPORTED, "cannot be copied up to position 4");
    OK(lockstep_seq_rm(s, 0, 10)); /* the checkpoint */
    CHECK(lockstep_seq_len(s, 0) == 10);
    OK(lockstep_seq_cp(s, 0, 1, -1));
    CHECK(lockstep_seq_len(s, 1) == 10);

    /* The state carries the recurrent state: the same logits follow in another session. */
    OK(lockstep_state_seq_size(s, 0, &size));
    state = malloc(size);
    OK(lockstep_state_seq_save(s, 0, state, size, &n));
    next_logits(s, 0, toks[10], want, V);
    OK(lockstep_state_seq_load(t, 0, state, n));
    next_logits(t, 0, toks[10], got, V);
    CHECK(memcmp(want, got, sizeof(float) * (size_t)V) == 0);
    /* (no checkpoint came with it: only 0 or the end) */
    ERR(lockstep_seq_rm(t, 0, 5), LOCKSTEP_ERR_UNSUPPORTED, "cannot return");
    OK(lockstep_seq_rm(t, 0, 0));
    free(state);
    free(want);
    free(got);
    lockstep_session_free(t);
    lockstep_session_free(s);
}

/* ---- embeddings ---- */
static void test_embed(lockstep_model* m, const char* bert_path) {
    lockstep_model* bert = load(bert_path);
    lockstep_session* s = new_session(bert, 96, 96, 2);
    lockstep_session* g = new_session(m, 64, 8, 1);
    lockstep_batch b;
    int32_t toks[64], n, i, rows = 0;
    int8_t all_flags[64];
    const int64_t E = lockstep_model_n_embd(bert);
    float *v = malloc(sizeof(float) * (size_t)E), *mean = calloc((size_t)E, sizeof(float)), e64[64];
    const float* out = NULL;
    int64_t row_len = 0, j;
    double norm = 0, worst = 0;

    CHECK(lockstep_model_has_logits(bert) == 0 && lockstep_model_pooling(bert) == LOCKSTEP_POOLING_MEAN);
    n = tokenize(bert, "the quick brown fox", 1, toks, 64);
    OK(lockstep_embed(s, 0, toks, n, LOCKSTEP_POOLING_MODEL, 2, v, E));
    for (j = 0; j < E; ++j) norm += (double)v[j] * v[j];
    CHECK(fabs(norm - 1.0) < 1e-5);
    CHECK(lockstep_seq_len(s, 0) == n);
    /* The mean of the per-token states, normalized: the same vector (to rounding). */
    for (i = 0; i < n; ++i) all_flags[i] = 1;
    b = one_seq(toks, n);
    b.seq_id = NULL;
    b.logits = all_flags;
    {
        int32_t ones[64];
        for (i = 0; i < n; ++i) ones[i] = 1;
        b.seq_id = ones;
        OK(lockstep_decode_hidden(s, &b));
    }
    OK(lockstep_get_outputs(s, &out, &rows, &row_len));
    CHECK(rows == n && row_len == E);
    for (i = 0; i < rows; ++i)
        for (j = 0; j < E; ++j) mean[j] += out[i * E + j] / (float)rows;
    norm = 0;
    for (j = 0; j < E; ++j) norm += (double)mean[j] * mean[j];
    for (j = 0; j < E; ++j) worst = fmax(worst, fabs(mean[j] / sqrt(norm) - v[j]));
    CHECK(worst < 1e-4);
    /* An embedding model gives no logits. */
    b = one_seq(toks, n);
    OK(lockstep_seq_rm(s, 0, 0));
    ERR(lockstep_decode(s, &b), LOCKSTEP_ERR_INVALID_ARGUMENT, "is an embedding model");
    /* A decoder without a pooling key: pass one. */
    n = tokenize(m, "the cat", 1, toks, 64);
    ERR(lockstep_embed(g, 0, toks, n, LOCKSTEP_POOLING_MODEL, 2, e64, 64), LOCKSTEP_ERR_INVALID_ARGUMENT, "names no pooling");
    OK(lockstep_embed(g, 0, toks, n, LOCKSTEP_POOLING_LAST, -1, e64, 64));
    OK(lockstep_embed(g, 0, toks, n, LOCKSTEP_POOLING_MEAN, 2, e64, 64));
    ERR(lockstep_embed(g, 0, toks, n, LOCKSTEP_POOLING_NONE, 2, e64, 64), LOCKSTEP_ERR_INVALID_ARGUMENT, "pooling NONE");
    ERR(lockstep_embed(g, 0, toks, n, 7, 2, e64, 64), LOCKSTEP_ERR_INVALID_ARGUMENT, "pooling 7");
    ERR(lockstep_embed(g, 0, toks, n, LOCKSTEP_POOLING_MEAN, -2, e64, 64), LOCKSTEP_ERR_INVALID_ARGUMENT, "normalize -2");
    ERR(lockstep_embed(g, 0, toks, n, LOCKSTEP_POOLING_MEAN, 2, e64, 63), LOCKSTEP_ERR_INVALID_ARGUMENT, "room for 63 floats, the embedding has 64");
    ERR(lockstep_embed(g, 0, toks, n, LOCKSTEP_POOLING_MEAN, 2, NULL, 64), LOCKSTEP_ERR_INVALID_ARGUMENT, "out is NULL");
    ERR(lockstep_embed(g, 0, toks, 0, LOCKSTEP_POOLING_MEAN, 2, e64, 64), LOCKSTEP_ERR_INVALID_ARGUMENT, "at least one token");
    ERR(lockstep_embed(g, 0, NULL, 2, LOCKSTEP_POOLING_MEAN, 2, e64, 64), LOCKSTEP_ERR_INVALID_ARGUMENT, "tokens is NULL");
    ERR(lockstep_embed(g, 1, toks, n, LOCKSTEP_POOLING_MEAN, 2, e64, 64), LOCKSTEP_ERR_OUT_OF_RANGE, "sequence 1 outside");
    ERR(lockstep_embed(NULL, 0, toks, n, LOCKSTEP_POOLING_MEAN, 2, e64, 64), LOCKSTEP_ERR_INVALID_ARGUMENT, "session is NULL");
    toks[1] = 999;
    ERR(lockstep_embed(g, 0, toks, n, LOCKSTEP_POOLING_MEAN, 2, e64, 64), LOCKSTEP_ERR_OUT_OF_RANGE, "999");
    {
        int32_t many[65];
        for (i = 0; i < 65; ++i) many[i] = 300;
        ERR(lockstep_embed(g, 0, many, 65, LOCKSTEP_POOLING_MEAN, 2, e64, 64), LOCKSTEP_ERR_TOO_LONG, "");
    }
    free(v);
    free(mean);
    lockstep_session_free(g);
    lockstep_session_free(s);
    lockstep_model_free(bert);
}

/* ---- samplers ---- */
static void test_sampler(lockstep_model* m, lockstep_model* other) {
    lockstep_sampler_params p = lockstep_sampler_default_params();
    lockstep_sampler *s = (lockstep_sampler*)&p, *g;
    float logits[320], copy[320], chosen = 1.0f, lp[4];
    int32_t t = -1, t2 = -1, i, ids[4], n_top = 0, hist[3] = {5, 6, 7}, bias_tok = 9;
    float bias_val = -INFINITY;
    const int32_t V = lockstep_model_n_vocab(m);

    CHECK(p.temp > 0.79f && p.temp < 0.81f && p.top_k == 40 && p.repeat_last_n == 64 && p.grammar == NULL && p.n_logprobs == 0);
    ERR(lockstep_sampler_new(NULL, &p, &s), LOCKSTEP_ERR_INVALID_ARGUMENT, "lockstep_sampler_new: model is NULL");
    CHECK(s == NULL);
    ERR(lockstep_sampler_new(m, &p, NULL), LOCKSTEP_ERR_INVALID_ARGUMENT, "sampler is NULL");
    p.grammar = "root ::= \"a\"";
    p.json_schema = "{}";
    ERR(lockstep_sampler_new(m, &p, &s), LOCKSTEP_ERR_INVALID_ARGUMENT, "give one");
    p.json_schema = NULL;
    p.grammar = "root ::= (";
    ERR(lockstep_sampler_new(m, &p, &s), LOCKSTEP_ERR_GRAMMAR, "");
    p.grammar = NULL;
    p.json_schema = "{";
    ERR(lockstep_sampler_new(m, &p, &s), LOCKSTEP_ERR_GRAMMAR, "json_schema is not JSON");
    p = lockstep_sampler_default_params();
    p.n_logit_bias = 1;
    ERR(lockstep_sampler_new(m, &p, &s), LOCKSTEP_ERR_INVALID_ARGUMENT, "logit bias");
    bias_tok = 320;
    p.logit_bias_tokens = &bias_tok;
    p.logit_bias_values = &bias_val;
    ERR(lockstep_sampler_new(m, &p, &s), LOCKSTEP_ERR_OUT_OF_RANGE, "token id 320 outside");
    p = lockstep_sampler_default_params();
    p.n_logprobs = -1;
    ERR(lockstep_sampler_new(m, &p, &s), LOCKSTEP_ERR_INVALID_ARGUMENT, "n_logprobs is negative");
    p = lockstep_sampler_default_params();
    p.repeat_last_n = -2;
    ERR(lockstep_sampler_new(m, &p, &s), LOCKSTEP_ERR_INVALID_ARGUMENT, "repeat_last_n");
    CHECK(s == NULL);
    lockstep_sampler_free(NULL);

    /* Greedy over logits the caller holds, which stay as they were. */
    for (i = 0; i < 320; ++i) logits[i] = (float)((i * 37) % 101) / 10.0f;
    logits[123] = 50.0f;
    logits[9] = 40.0f;
    memcpy(copy, logits, sizeof logits);
    g = greedy_sampler(m);
    OK(lockstep_sampler_sample_logits(g, logits, V, hist, 3, 3, &t));
    CHECK(t == 123 && memcmp(copy, logits, sizeof logits) == 0);
    ERR(lockstep_sampler_sample_logits(g, logits, V - 1, hist, 3, 3, &t), LOCKSTEP_ERR_INVALID_ARGUMENT, "logits of 319 entries, the vocabulary has 320");
    CHECK(t == -1);
    ERR(lockstep_sampler_sample_logits(g, NULL, V, hist, 3, 3, &t), LOCKSTEP_ERR_INVALID_ARGUMENT, "logits is NULL");
    ERR(lockstep_sampler_sample_logits(g, logits, V, NULL, 3, 3, &t), LOCKSTEP_ERR_INVALID_ARGUMENT, "history is NULL");
    ERR(lockstep_sampler_sample_logits(g, logits, V, hist, -1, 3, &t), LOCKSTEP_ERR_INVALID_ARGUMENT, "n_history is negative");
    ERR(lockstep_sampler_sample_logits(g, logits, V, hist, 3, -1, &t), LOCKSTEP_ERR_OUT_OF_RANGE, "position -1");
    ERR(lockstep_sampler_sample_logits(g, logits, V, hist, 3, 3, NULL), LOCKSTEP_ERR_INVALID_ARGUMENT, "token is NULL");
    ERR(lockstep_sampler_sample_logits(NULL, logits, V, hist, 3, 3, &t), LOCKSTEP_ERR_INVALID_ARGUMENT, "sampler is NULL");
    ERR(lockstep_sampler_logprobs(g, &chosen, ids, lp, 4, &n_top), LOCKSTEP_ERR_INVALID_ARGUMENT, "records no logprobs");
    ERR(lockstep_sampler_reset(NULL), LOCKSTEP_ERR_INVALID_ARGUMENT, "sampler is NULL");
    OK(lockstep_sampler_reset(g));

    /* A bias that bans the best token; logprobs of the top 3. */
    p = lockstep_sampler_default_params();
    p.temp = 0.0f;
    bias_tok = 123;
    p.n_logit_bias = 1;
    p.logit_bias_tokens = &bias_tok;
    p.logit_bias_values = &bias_val;
    p.n_logprobs = 3;
    OK(lockstep_sampler_new(m, &p, &s));
    OK(lockstep_sampler_sample_logits(s, logits, V, hist, 3, 3, &t));
    CHECK(t == 9);
    OK(lockstep_sampler_logprobs(s, &chosen, ids, lp, 4, &n_top));
    CHECK(n_top == 3 && ids[0] == 123 && ids[1] == 9 && lp[0] > lp[1] && lp[1] >= lp[2] && chosen < 0.0f && fabsf(chosen - lp[1]) < 1e-6f);
    OK(lockstep_sampler_logprobs(s, NULL, NULL, NULL, 0, &n_top));
    CHECK(n_top == 3);
    ERR(lockstep_sampler_logprobs(s, &chosen, ids, lp, -1, &n_top), LOCKSTEP_ERR_INVALID_ARGUMENT, "capacity is negative");
    ERR(lockstep_sampler_logprobs(s, &chosen, ids, lp, 4, NULL), LOCKSTEP_ERR_INVALID_ARGUMENT, "n_top is NULL");
    ERR(lockstep_sampler_logprobs(NULL, &chosen, ids, lp, 4, &n_top), LOCKSTEP_ERR_INVALID_ARGUMENT, "sampler is NULL");
    lockstep_sampler_free(s);

    /* A seeded draw is keyed by position: the same position gives the same token, again after a reset. */
    p = lockstep_sampler_default_params();
    p.seed = 42;
    p.top_k = 0;
    p.top_p = 1.0f;
    p.min_p = 0.0f;
    p.temp = 5.0f;
    OK(lockstep_sampler_new(m, &p, &s));
    OK(lockstep_sampler_sample_logits(s, logits, V, hist, 3, 17, &t));
    OK(lockstep_sampler_sample_logits(s, logits, V, hist, 3, 17, &t2));
    CHECK(t == t2);
    OK(lockstep_sampler_reset(s));
    OK(lockstep_sampler_sample_logits(s, logits, V, hist, 3, 17, &t2));
    CHECK(t == t2);
    lockstep_sampler_free(s);

    /* Over a session's rows: before any decode, after hidden states, another model's sampler. */
    {
        lockstep_session* ses = new_session(m, 32, 8, 1);
        lockstep_batch b;
        int32_t prompt[3] = {2, 300, 301};
        ERR(lockstep_sampler_sample(g, ses, 0, -1, &t), LOCKSTEP_ERR_OUT_OF_RANGE, "outside the last decode's 0 rows");
        b = one_seq(prompt, 3);
        OK(lockstep_decode_hidden(ses, &b));
        ERR(lockstep_sampler_sample(g, ses, 0, -1, &t), LOCKSTEP_ERR_INVALID_ARGUMENT, "gave hidden states");
        OK(lockstep_session_reset(ses));
        OK(lockstep_decode(ses, &b));
        OK(lockstep_sampler_sample(g, ses, 0, -1, &t));
        CHECK(t >= 0 && t < V);
        ERR(lockstep_sampler_sample(g, ses, 1, -1, &t), LOCKSTEP_ERR_OUT_OF_RANGE, "sequence 1 outside");
        ERR(lockstep_sampler_sample(g, ses, 0, 1, &t), LOCKSTEP_ERR_OUT_OF_RANGE, "output row 1");
        ERR(lockstep_sampler_sample(g, NULL, 0, -1, &t), LOCKSTEP_ERR_INVALID_ARGUMENT, "session is NULL");
        ERR(lockstep_sampler_sample(NULL, ses, 0, -1, &t), LOCKSTEP_ERR_INVALID_ARGUMENT, "sampler is NULL");
        ERR(lockstep_sampler_sample(g, ses, 0, -1, NULL), LOCKSTEP_ERR_INVALID_ARGUMENT, "token is NULL");
        if (lockstep_model_n_vocab(other) != V) {
            lockstep_sampler* o = greedy_sampler(other);
            ERR(lockstep_sampler_sample(o, ses, 0, -1, &t), LOCKSTEP_ERR_INVALID_ARGUMENT, "another model's vocabulary");
            ERR(lockstep_generate(ses, o, 0, prompt, 3, 2, NULL, NULL, NULL), LOCKSTEP_ERR_INVALID_ARGUMENT, "another model's vocabulary");
            lockstep_sampler_free(o);
        }
        lockstep_session_free(ses);
    }
    lockstep_sampler_free(g);
}

/* ---- constrained generation: a grammar, a JSON schema ---- */
static void test_grammar(lockstep_model* m) {
    lockstep_session* s = new_session(m, 128, 16, 1);
    lockstep_sampler_params p = lockstep_sampler_default_params();
    lockstep_sampler* g = NULL;
    lockstep_generate_result r;
    collected c;
    int32_t prompt[32], n;

    n = tokenize(m, "the cat", 1, prompt, 32);
    p.temp = 0.0f;
    p.grammar = "root ::= (\"yes\" | \"no\") \".\"";
    OK(lockstep_sampler_new(m, &p, &g));
    memset(&c, 0, sizeof c);
    OK(lockstep_generate(s, g, 0, prompt, n, 16, collect, &c, &r));
    CHECK(strcmp(c.text, "yes.") == 0 || strcmp(c.text, "no.") == 0);
    CHECK(r.end_reason == LOCKSTEP_END_EOG);
    /* The grammar took the end too: without a reset nothing can follow it. */
    memset(&c, 0, sizeof c);
    ERR(lockstep_generate(s, g, 0, prompt, n, 16, collect, &c, &r), LOCKSTEP_ERR_GRAMMAR, "no token can continue the text");
    CHECK(c.n == 0);
    OK(lockstep_sampler_reset(g));
    memset(&c, 0, sizeof c);
    OK(lockstep_generate(s, g, 0, prompt, n, 16, collect, &c, &r));
    CHECK(strcmp(c.text, "yes.") == 0 || strcmp(c.text, "no.") == 0);
    lockstep_sampler_free(g);

    p.grammar = NULL;
    p.json_schema = "{\"type\": \"object\", \"properties\": {\"a\": {\"type\": \"boolean\"}}, \"required\": [\"a\"], \"additionalProperties\": false}";
    OK(lockstep_sampler_new(m, &p, &g));
    memset(&c, 0, sizeof c);
    OK(lockstep_generate(s, g, 0, prompt, n, 40, collect, &c, &r));
    /* (the grammar lets whitespace run on: 40 tokens may end inside the object) */
    CHECK(c.text[0] == '{' && strstr(c.text, "\"a\"") != NULL && (strstr(c.text, "true") || strstr(c.text, "false")));
    lockstep_sampler_free(g);
    lockstep_session_free(s);
}

/* ---- chat templates ---- */
static void test_chat(lockstep_model* m, lockstep_model* templated, const char* template_path) {
    lockstep_chat_params p = lockstep_chat_default_params();
    char buf[2048];
    size_t n = 0, src_len = 0;
    int32_t add_bos = 7;
    char* src = read_file(template_path, &src_len);

    CHECK(p.add_generation_prompt == 1 && p.messages_json == NULL && p.template_source == NULL);
    p.messages_json = "[{\"role\": \"user\", \"content\": \"hi there\"}]";
    /* The family's built-in template (the tiny file has none of its own). */
    OK(lockstep_chat_render(m, &p, buf, sizeof buf, &n, &add_bos));
    CHECK(n == strlen(buf) && strstr(buf, "hi there") != NULL && (add_bos == 0 || add_bos == 1));
    /* A Jinja source of the caller's, with and without the generation prompt. */
    p.template_source = "{% for m in messages %}[{{ m.role }}]{{ m.content }}{% endfor %}{% if add_generation_prompt %}[assistant]{% endif %}";
    OK(lockstep_chat_render(m, &p, buf, sizeof buf, &n, &add_bos));
    CHECK(strcmp(buf, "[user]hi there[assistant]") == 0 && add_bos == 1);
    p.add_generation_prompt = 0;
    OK(lockstep_chat_render(m, &p, buf, sizeof buf, &n, NULL));
    CHECK(strcmp(buf, "[user]hi there") == 0);
    p.template_source = "{{ bos_token }}{{ messages[0].content }}{% if tools %}{{ tools[0].function.name }}{% endif %}{{ flavour }}";
    p.tools_json = "[{\"type\": \"function\", \"function\": {\"name\": \"get_time\", \"parameters\": {}}}]";
    p.kwargs_json = "{\"flavour\": \"!\"}";
    /* (a template that does not write the tools is told them in its first message, the
     * server's generic tool prompt) */
    OK(lockstep_chat_render(m, &p, buf, sizeof buf, &n, &add_bos));
    CHECK(strncmp(buf, "<bos>", 5) == 0 && strstr(buf, "get_time") != NULL && buf[n - 1] == '!' && add_bos == 0);
    {
        const size_t whole = n;
        ERR(lockstep_chat_render(m, &p, buf, 5, &n, &add_bos), LOCKSTEP_ERR_BUFFER_TOO_SMALL, "needs");
        CHECK(n == whole);
    }
    p.tools_json = NULL;
    OK(lockstep_chat_render(m, &p, buf, sizeof buf, &n, &add_bos));
    CHECK(strcmp(buf, "<bos>hi there!") == 0 && add_bos == 0);
    /* The file's own template (TEMPLATED has tokenizer.chat_template from TEMPLATE). */
    p = lockstep_chat_default_params();
    p.messages_json = "[{\"role\": \"user\", \"content\": \"hi there\"}]";
    OK(lockstep_model_chat_template(templated, NULL, buf, sizeof buf, &n));
    CHECK(n == src_len && memcmp(buf, src, n) == 0);
    ERR(lockstep_model_chat_template(templated, "tool_use", buf, sizeof buf, &n), LOCKSTEP_ERR_NOT_FOUND, "tokenizer.chat_template.tool_use");
    ERR(lockstep_model_chat_template(templated, NULL, buf, 3, &n), LOCKSTEP_ERR_BUFFER_TOO_SMALL, "needs");
    OK(lockstep_chat_render(templated, &p, buf, sizeof buf, &n, &add_bos));
    CHECK(strcmp(buf, "<<user: hi there>>\n<<assistant: ") == 0);
    /* Refusals. */
    p.template_name = "nosuch";
    ERR(lockstep_chat_render(templated, &p, buf, sizeof buf, &n, &add_bos), LOCKSTEP_ERR_INVALID_ARGUMENT, "no chat template named 'nosuch'");
    p.template_name = NULL;
    p.template_source = "{% for %}";
    ERR(lockstep_chat_render(m, &p, buf, sizeof buf, &n, &add_bos), LOCKSTEP_ERR_TEMPLATE, "");
    p.template_source = "{{ messages[0].content | nosuchfilter }}";
    ERR(lockstep_chat_render(m, &p, buf, sizeof buf, &n, &add_bos), LOCKSTEP_ERR_TEMPLATE, "");
    p.template_source = NULL;
    p.messages_json = "not json";
    ERR(lockstep_chat_render(m, &p, buf, sizeof buf, &n, &add_bos), LOCKSTEP_ERR_INVALID_ARGUMENT, "messages_json is not JSON");
    p.messages_json = "{}";
    ERR(lockstep_chat_render(m, &p, buf, sizeof buf, &n, &add_bos), LOCKSTEP_ERR_INVALID_ARGUMENT, "messages_json is not a JSON array");
    p.messages_json = "[]";
    p.tools_json = "5";
    ERR(lockstep_chat_render(m, &p, buf, sizeof buf, &n, &add_bos), LOCKSTEP_ERR_INVALID_ARGUMENT, "tools_json is not a JSON array");
    p.tools_json = NULL;
    p.kwargs_json = "[]";
    ERR(lockstep_chat_render(m, &p, buf, sizeof buf, &n, &add_bos), LOCKSTEP_ERR_INVALID_ARGUMENT, "kwargs_json is not a JSON object");
    p.kwargs_json = NULL;
    p.messages_json = NULL;
    ERR(lockstep_chat_render(m, &p, buf, sizeof buf, &n, &add_bos), LOCKSTEP_ERR_INVALID_ARGUMENT, "messages_json is NULL");
    ERR(lockstep_chat_render(m, NULL, buf, sizeof buf, &n, &add_bos), LOCKSTEP_ERR_INVALID_ARGUMENT, "params is NULL");
    ERR(lockstep_chat_render(NULL, &p, buf, sizeof buf, &n, &add_bos), LOCKSTEP_ERR_INVALID_ARGUMENT, "model is NULL");
    p.messages_json = "[]";
    ERR(lockstep_chat_render(m, &p, buf, sizeof buf, NULL, &add_bos), LOCKSTEP_ERR_INVALID_ARGUMENT, "n_out is NULL");
    free(src);
}

/* ---- tool calls: the format, a forced call's grammar, a reply read ---- */
static void test_tools(lockstep_model* m) {
    lockstep_chat_params p = lockstep_chat_default_params();
    char buf[4096];
    size_t n = 0;
    const char* tools = "[{\"type\": \"function\", \"function\": {\"name\": \"get_time\", \"parameters\": {\"type\": \"object\", "
                        "\"properties\": {\"tz\": {\"type\": \"string\"}}, \"required\": [\"tz\"]}}}, "
                        "{\"type\": \"function\", \"function\": {\"name\": \"get_weather\", \"parameters\": {}}}]";
    const char* call = "<tool_call>{\"name\": \"get_time\", \"arguments\": {\"tz\": \"CET\"}}</tool_call>";
    const char* broken = "<tool_call>{\"name\": \"get_time\", \"arguments\": {\"tz\": ";

    /* The model's own format: the tiny Gemma 4 has no template, its family writes gemma4 calls. */
    OK(lockstep_chat_tool_format(m, &p, buf, sizeof buf, &n));
    CHECK(n == strlen(buf) && strstr(buf, "\"format\":\"gemma4\"") != NULL && strstr(buf, "\"<|tool_call>\"") != NULL);
    /* A template that writes Hermes calls. */
    p.template_source = "{% for m in messages %}{{ m.content }}{% endfor %}{% if tools %}<tool_call>{% endif %}";
    OK(lockstep_chat_tool_format(m, &p, buf, sizeof buf, &n));
    CHECK(strcmp(buf, "{\"format\":\"hermes\",\"markers\":[\"<tool_call>\",\"</tool_call>\"],\"marker_tokens\":[],\"gives_ids\":false}") == 0);
    ERR(lockstep_chat_tool_format(m, &p, buf, 4, &n), LOCKSTEP_ERR_BUFFER_TOO_SMALL, "needs");
    CHECK(n == strlen("{\"format\":\"hermes\",\"markers\":[\"<tool_call>\",\"</tool_call>\"],\"marker_tokens\":[],\"gives_ids\":false}"));

    /* A forced call's grammar: any of the tools, or the one named. */
    p.tools_json = tools;
    OK(lockstep_chat_tool_grammar(m, &p, NULL, 1, buf, sizeof buf, &n));
    CHECK(strncmp(buf, "root ::=", 8) == 0 && strstr(buf, "get_time") != NULL && strstr(buf, "get_weather") != NULL);
    OK(lockstep_chat_tool_grammar(m, &p, "get_time", 0, buf, sizeof buf, &n));
    CHECK(strstr(buf, "get_time") != NULL && strstr(buf, "get_weather") == NULL && strstr(buf, "<tool_call>") != NULL);
    {
        /* The grammar is one a sampler takes. */
        lockstep_sampler_params sp = lockstep_sampler_default_params();
        lockstep_sampler* g = NULL;
        sp.temp = 0.0f;
        sp.grammar = buf;
        OK(lockstep_sampler_new(m, &sp, &g));
        lockstep_sampler_free(g);
    }
    ERR(lockstep_chat_tool_grammar(m, &p, "nosuch", 0, buf, sizeof buf, &n), LOCKSTEP_ERR_INVALID_ARGUMENT, "no tool is named 'nosuch'");
    ERR(lockstep_chat_tool_grammar(m, &p, NULL, 0, buf, 8, &n), LOCKSTEP_ERR_BUFFER_TOO_SMALL, "needs");
    p.tools_json = NULL;
    ERR(lockstep_chat_tool_grammar(m, &p, NULL, 0, buf, sizeof buf, &n), LOCKSTEP_ERR_INVALID_ARGUMENT, "needs tools");
    p.tools_json = "[{\"type\": \"retrieval\"}]";
    ERR(lockstep_chat_tool_grammar(m, &p, NULL, 0, buf, sizeof buf, &n), LOCKSTEP_ERR_INVALID_ARGUMENT, "tools_json: tools[0]");
    p.tools_json = "[{\"type\": \"function\", \"function\": {\"name\": \"f\", \"parameters\": {\"type\": \"object\", \"properties\": {\"x\": {\"$ref\": \"#/nowhere\"}}}}}]";
    ERR(lockstep_chat_tool_grammar(m, &p, NULL, 0, buf, sizeof buf, &n), LOCKSTEP_ERR_GRAMMAR, "");
    p.tools_json = "not json";
    ERR(lockstep_chat_tool_grammar(m, &p, NULL, 0, buf, sizeof buf, &n), LOCKSTEP_ERR_INVALID_ARGUMENT, "tools_json is not JSON");

    /* Replies read: a call, a broken call (its text as content, and why), plain text. */
    p.tools_json = tools;
    OK(lockstep_chat_parse(m, &p, call, strlen(call), buf, sizeof buf, &n));
    CHECK(strcmp(buf, "{\"content\":null,\"tool_calls\":[{\"id\":\"call_0\",\"type\":\"function\",\"function\":{\"name\":\"get_time\","
                      "\"arguments\":\"{\\\"tz\\\": \\\"CET\\\"}\"}}]}") == 0);
    OK(lockstep_chat_parse(m, &p, broken, strlen(broken), buf, sizeof buf, &n));
    CHECK(strstr(buf, "\"tool_calls\":[]") != NULL && strstr(buf, "\"error\":\"tool call 0:") != NULL && strstr(buf, "\"content\":\"<tool_call>") != NULL);
    OK(lockstep_chat_parse(m, &p, "hello", 5, buf, sizeof buf, &n));
    CHECK(strcmp(buf, "{\"content\":\"hello\",\"tool_calls\":[]}") == 0);
    OK(lockstep_chat_parse(m, &p, NULL, 0, buf, sizeof buf, &n));
    CHECK(strcmp(buf, "{\"content\":\"\",\"tool_calls\":[]}") == 0);
    ERR(lockstep_chat_parse(m, &p, call, strlen(call), buf, 10, &n), LOCKSTEP_ERR_BUFFER_TOO_SMALL, "needs");
    CHECK(n > 10);
    ERR(lockstep_chat_parse(m, &p, NULL, 3, buf, sizeof buf, &n), LOCKSTEP_ERR_INVALID_ARGUMENT, "text is NULL");
    /* Refusals every function shares. */
    ERR(lockstep_chat_parse(NULL, &p, "x", 1, buf, sizeof buf, &n), LOCKSTEP_ERR_INVALID_ARGUMENT, "model is NULL");
    ERR(lockstep_chat_parse(m, NULL, "x", 1, buf, sizeof buf, &n), LOCKSTEP_ERR_INVALID_ARGUMENT, "params is NULL");
    ERR(lockstep_chat_parse(m, &p, "x", 1, buf, sizeof buf, NULL), LOCKSTEP_ERR_INVALID_ARGUMENT, "n_out is NULL");
    ERR(lockstep_chat_tool_format(NULL, &p, buf, sizeof buf, &n), LOCKSTEP_ERR_INVALID_ARGUMENT, "model is NULL");
    ERR(lockstep_chat_tool_format(m, NULL, buf, sizeof buf, &n), LOCKSTEP_ERR_INVALID_ARGUMENT, "params is NULL");
    ERR(lockstep_chat_tool_grammar(m, &p, NULL, 0, buf, sizeof buf, NULL), LOCKSTEP_ERR_INVALID_ARGUMENT, "n_out is NULL");
    p.template_source = "{% for %}";
    ERR(lockstep_chat_parse(m, &p, "x", 1, buf, sizeof buf, &n), LOCKSTEP_ERR_TEMPLATE, "");
    p.template_source = NULL;
    p.template_name = "nosuch";
    ERR(lockstep_chat_tool_format(m, &p, buf, sizeof buf, &n), LOCKSTEP_ERR_INVALID_ARGUMENT, "no chat template named 'nosuch'");
}

/* ---- a reply read token by token: reasoning, stop strings, tool calls ---- */
static size_t push_text(lockstep_model* m, lockstep_reply_reader* r, const char* text, char* deltas, size_t cap, int32_t* stopped) {
    int32_t toks[512], n_tok = 0, i;
    size_t used = strlen(deltas), n = 0;
    OK(lockstep_tokenize(m, text, strlen(text), 0, 1, toks, 512, &n_tok));
    for (i = 0; i < n_tok && !*stopped; ++i) {
        OK(lockstep_reply_reader_push(r, toks[i], stopped));
        if (cap == 0) continue; /* (left in the reader) */
        OK(lockstep_reply_reader_take(r, deltas + used, cap - used, &n));
        used += n;
    }
    return used;
}

static void test_reply_reader(lockstep_model* m) {
    lockstep_chat_params p = lockstep_chat_default_params();
    lockstep_reply_reader* r = (lockstep_reply_reader*)&r;
    char deltas[8192] = "", buf[2048];
    size_t n = 0, whole = 0;
    int32_t stopped = 0;
    const char* tools = "[{\"type\": \"function\", \"function\": {\"name\": \"get_time\", \"parameters\": {\"type\": \"object\", "
                        "\"properties\": {\"tz\": {\"type\": \"string\"}}}}}]";

    /* Gemma 4's thought channel (its family's reply markers) split off, then a Hermes call
     * (the caller's template writes that format), its id from the prefix given. */
    p.template_source = "{% for m in messages %}{{ m.content }}{% endfor %}{% if tools %}<tool_call>{% endif %}";
    p.tools_json = tools;
    OK(lockstep_reply_reader_new(m, &p, 1, "[\"NEVER\"]", "call_abc_", &r));
    push_text(m, r, "<|channel>thought\nhmm<channel|>Sure.<tool_call>{\"name\": \"get_time\", \"arguments\": {\"tz\": \"CET\"}}</tool_call>",
              deltas, 0, &stopped);
    CHECK(stopped == 0);
    ERR(lockstep_reply_reader_message(r, buf, sizeof buf, &n), LOCKSTEP_ERR_INVALID_ARGUMENT, "not finished");
    OK(lockstep_reply_reader_finish(r));
    OK(lockstep_reply_reader_finish(r)); /* (again: nothing) */
    OK(lockstep_reply_reader_take(r, deltas + strlen(deltas), sizeof deltas - strlen(deltas), &n));
    OK(lockstep_reply_reader_message(r, buf, sizeof buf, &n));
    CHECK(strcmp(buf, "{\"content\":\"Sure.\",\"reasoning_content\":\"hmm\",\"tool_calls\":[{\"id\":\"call_abc_0\",\"type\":\"function\","
                      "\"function\":{\"name\":\"get_time\",\"arguments\":\"{\\\"tz\\\": \\\"CET\\\"}\"}}]}") == 0);
    /* The deltas, taken at once: reasoning first (adjacent text of a kind joined), the call
     * announced with its id and name, then its arguments piece by piece. */
    CHECK(strncmp(deltas, "[{\"reasoning_content\":\"hmm\"},{\"content\":\"Sure.\"},{\"tool_calls\":[{\"index\":0,\"id\":\"call_abc_0\","
                          "\"type\":\"function\",\"function\":{\"name\":\"get_time\",\"arguments\":\"\"}}]},{\"tool_calls\":[{\"index\":0,"
                          "\"function\":{\"arguments\":\"{\"}}]}", 217) == 0);
    CHECK(strstr(deltas, "tool_call>") == NULL && strstr(deltas, "channel") == NULL);
    ERR(lockstep_reply_reader_push(r, 10, &stopped), LOCKSTEP_ERR_INVALID_ARGUMENT, "finished");
    lockstep_reply_reader_free(r);

    /* A stop string ends the visible text; deltas that do not fit wait for a larger buffer. */
    deltas[0] = '\0';
    OK(lockstep_reply_reader_new(m, &p, 0, "[\"STOPX\", \"\"]", NULL, &r));
    push_text(m, r, "Hello STOPX and more", deltas, 0, &stopped);
    CHECK(stopped == 1);
    OK(lockstep_reply_reader_push(r, 10, &stopped)); /* after the stop: released nothing */
    CHECK(stopped == 1);
    OK(lockstep_reply_reader_finish(r));
    ERR(lockstep_reply_reader_take(r, buf, 4, &n), LOCKSTEP_ERR_BUFFER_TOO_SMALL, "needs");
    whole = n;
    OK(lockstep_reply_reader_take(r, buf, sizeof buf, &n));
    CHECK(n == whole && strcmp(buf, "[{\"content\":\"Hello \"}]") == 0);
    OK(lockstep_reply_reader_take(r, buf, sizeof buf, &n));
    CHECK(strcmp(buf, "[]") == 0);
    OK(lockstep_reply_reader_message(r, buf, sizeof buf, &n));
    CHECK(strcmp(buf, "{\"content\":\"Hello \",\"tool_calls\":[]}") == 0);
    lockstep_reply_reader_free(r);

    /* A call that breaks the format: the text as written, and why. */
    OK(lockstep_reply_reader_new(m, &p, 1, NULL, NULL, &r));
    deltas[0] = '\0';
    stopped = 0;
    push_text(m, r, "<tool_call>{\"name\": \"get_time\", \"arguments\": {\"tz\": ", deltas, sizeof deltas, &stopped);
    OK(lockstep_reply_reader_finish(r));
    OK(lockstep_reply_reader_message(r, buf, sizeof buf, &n));
    CHECK(strstr(buf, "\"content\":\"<tool_call>") != NULL && strstr(buf, "\"tool_calls\":[]") != NULL && strstr(buf, "\"error\":\"the model's tool call 0") != NULL);
    /* Refusals. */
    ERR(lockstep_reply_reader_push(r, 100000, NULL), LOCKSTEP_ERR_OUT_OF_RANGE, "100000");
    ERR(lockstep_reply_reader_push(NULL, 1, NULL), LOCKSTEP_ERR_INVALID_ARGUMENT, "reader is NULL");
    ERR(lockstep_reply_reader_finish(NULL), LOCKSTEP_ERR_INVALID_ARGUMENT, "reader is NULL");
    ERR(lockstep_reply_reader_take(NULL, buf, sizeof buf, &n), LOCKSTEP_ERR_INVALID_ARGUMENT, "reader is NULL");
    ERR(lockstep_reply_reader_take(r, buf, sizeof buf, NULL), LOCKSTEP_ERR_INVALID_ARGUMENT, "n_out is NULL");
    ERR(lockstep_reply_reader_message(NULL, buf, sizeof buf, &n), LOCKSTEP_ERR_INVALID_ARGUMENT, "reader is NULL");
    lockstep_reply_reader_free(r);
    lockstep_reply_reader_free(NULL);
    r = (lockstep_reply_reader*)&r;
    ERR(lockstep_reply_reader_new(m, &p, 1, "[1]", NULL, &r), LOCKSTEP_ERR_INVALID_ARGUMENT, "stops_json: a stop is not a string");
    CHECK(r == NULL);
    ERR(lockstep_reply_reader_new(m, &p, 1, "{", NULL, &r), LOCKSTEP_ERR_INVALID_ARGUMENT, "stops_json is not JSON");
    ERR(lockstep_reply_reader_new(m, &p, 1, "{}", NULL, &r), LOCKSTEP_ERR_INVALID_ARGUMENT, "stops_json is not a JSON array");
    ERR(lockstep_reply_reader_new(NULL, &p, 1, NULL, NULL, &r), LOCKSTEP_ERR_INVALID_ARGUMENT, "model is NULL");
    ERR(lockstep_reply_reader_new(m, NULL, 1, NULL, NULL, &r), LOCKSTEP_ERR_INVALID_ARGUMENT, "params is NULL");
    ERR(lockstep_reply_reader_new(m, &p, 1, NULL, NULL, NULL), LOCKSTEP_ERR_INVALID_ARGUMENT, "reader is NULL");
    p.tools_json = "[{\"type\": \"retrieval\"}]";
    ERR(lockstep_reply_reader_new(m, &p, 1, NULL, NULL, &r), LOCKSTEP_ERR_INVALID_ARGUMENT, "tools_json: tools[0]");
    p.tools_json = NULL;
    p.template_source = "{% for %}";
    ERR(lockstep_reply_reader_new(m, &p, 1, NULL, NULL, &r), LOCKSTEP_ERR_TEMPLATE, "");
}

/* ---- vocab_only: the vocabulary and metadata, no weights ---- */
static void test_vocab_only(const char* gemma4, lockstep_model* full, lockstep_model* hybrid) {
    lockstep_model_params p = lockstep_model_default_params();
    lockstep_model* v = NULL;
    lockstep_session* s = (lockstep_session*)&s;
    lockstep_session_params sp = lockstep_session_default_params();
    lockstep_chat_params cp = lockstep_chat_default_params();
    int32_t a[64], b[64], na = 0, nb = 0, i, same = 1, add_bos = 0;
    char buf[1024];
    size_t n = 0;
    const char* text = "The history of the printing press";

    CHECK(p.vocab_only == 0);
    CHECK(lockstep_model_vocab_only(full) == 0 && lockstep_model_is_recurrent(full) == 0 && lockstep_model_is_hybrid(full) == 0);
    CHECK(lockstep_model_is_recurrent(hybrid) == 0 && lockstep_model_is_hybrid(hybrid) == 1);
    BAD_GET(lockstep_model_is_recurrent(NULL), "model is NULL");
    BAD_GET(lockstep_model_is_hybrid(NULL), "model is NULL");
    BAD_GET(lockstep_model_vocab_only(NULL), "model is NULL");
    p.vocab_only = 1;
    p.backend = "nosuch"; /* (still checked) */
    ERR(lockstep_model_load(gemma4, &p, &v), LOCKSTEP_ERR_INVALID_ARGUMENT, "unknown backend");
    p.backend = NULL;
    ERR(lockstep_model_load(path_in(tmp_dir, "header_only.gguf"), &p, &v), LOCKSTEP_ERR_FORMAT, "");
    OK(lockstep_model_load(gemma4, &p, &v));
    CHECK(lockstep_model_vocab_only(v) == 1);
    CHECK(lockstep_model_n_vocab(v) == lockstep_model_n_vocab(full));
    CHECK(lockstep_model_n_ctx_train(v) == lockstep_model_n_ctx_train(full) && lockstep_model_n_embd(v) == lockstep_model_n_embd(full));
    CHECK(lockstep_model_n_layer(v) == lockstep_model_n_layer(full) && lockstep_model_pooling(v) == LOCKSTEP_POOLING_NONE);
    CHECK(lockstep_model_meta_count(v) == lockstep_model_meta_count(full) && lockstep_model_size(v) == lockstep_model_size(full));
    /* The same tokens and text as the whole model's. */
    OK(lockstep_tokenize(v, text, strlen(text), 1, 0, a, 64, &na));
    OK(lockstep_tokenize(full, text, strlen(text), 1, 0, b, 64, &nb));
    for (i = 0; i < na && i < nb; ++i) same = same && a[i] == b[i];
    CHECK(na == nb && same);
    OK(lockstep_detokenize(v, a, na, 0, buf, sizeof buf, &n));
    CHECK(strcmp(buf, text) == 0);
    cp.messages_json = "[{\"role\": \"user\", \"content\": \"hi there\"}]";
    OK(lockstep_chat_render(v, &cp, buf, sizeof buf, &n, &add_bos));
    CHECK(strstr(buf, "hi there") != NULL);
    /* What needs weights refuses, naming why. */
    sp.n_ctx = 32;
    ERR(lockstep_session_new(v, &sp, &s), LOCKSTEP_ERR_UNSUPPORTED, "vocab_only");
    CHECK(s == NULL);
    BAD_GET(lockstep_model_is_recurrent(v), "vocab_only");
    BAD_GET(lockstep_model_has_logits(v), "vocab_only");
    lockstep_model_free(v);
}

/* ---- handles freed in any order ---- */
static void test_lifetimes(const char* gemma4) {
    lockstep_model* m = load(gemma4);
    lockstep_session* s = new_session(m, 32, 8, 1);
    lockstep_sampler* g = greedy_sampler(m);
    const char* piece = NULL;
    int32_t len = 0, prompt[3] = {2, 300, 301};
    lockstep_generate_result r;

    OK(lockstep_token_piece(m, 300, 0, &piece, &len));
    lockstep_model_free(m); /* the session and the sampler keep what they need, pieces too */
    OK(lockstep_generate(s, g, 0, prompt, 3, 4, NULL, NULL, &r));
    CHECK(len == 2 && memcmp(piece, "er", 2) == 0);
    lockstep_session_free(s);
    lockstep_sampler_free(g);
}

/* Images: the tiny Gemma 3 and its projector; a prompt with an image evaluated, then generated
 * from with lockstep_generate (which finds the image held), the image not encoded twice; the
 * errors by status. */
static void test_vision(void) {
    lockstep_model* g = load(path_in(data_dir, "gemma3v_tiny.gguf"));
    lockstep_model* other = load(path_in(data_dir, "gemma4_tiny.gguf"));
    lockstep_vision* v = NULL;
    lockstep_session* s = NULL;
    lockstep_sampler* smp = NULL;
    lockstep_session_params sp = lockstep_session_default_params();
    lockstep_generate_result r;
    size_t n_png = 0;
    char* png = read_file(path_in(data_dir, "vision/rgb64.png"), &n_png);
    const uint8_t* imgs[1];
    size_t lens[1];
    int32_t ids[256], n_ids = 0, n_enc = 0;
    const char* text = "<start_of_turn>user\n<__media__>Describe.<end_of_turn>\n<start_of_turn>model\n";
    imgs[0] = (const uint8_t*)png;
    lens[0] = n_png;
    ERR(lockstep_vision_load(path_in(data_dir, "nonexistent_mmproj.gguf"), g, &v), LOCKSTEP_ERR_IO, "");
    ERR(lockstep_vision_load(path_in(data_dir, "gemma3v_tiny.gguf"), g, &v), LOCKSTEP_ERR_FORMAT, "not a projector");
    ERR(lockstep_vision_load(path_in(data_dir, "gemma3v_tiny_mmproj.gguf"), other, &v), LOCKSTEP_ERR_INVALID_ARGUMENT, "not a pair");
    CHECK(v == NULL);
    CHECK(lockstep_vision_load(path_in(data_dir, "gemma3v_tiny_mmproj.gguf"), g, &v) == LOCKSTEP_OK && v != NULL);
    sp.n_ctx = 256;
    CHECK(lockstep_session_new(g, &sp, &s) == LOCKSTEP_OK);
    CHECK(lockstep_sampler_new(g, NULL, &smp) == LOCKSTEP_OK);
    CHECK(lockstep_vision_prompt(v, s, 0, text, strlen(text), 1, imgs, lens, 1, ids, 256, &n_ids, &n_enc) == LOCKSTEP_OK);
    CHECK(n_ids == 31 && n_enc == 1 && ids[0] == 2 && ids[6] < 0 && ids[21] == ids[6] && ids[22] >= 0);
    CHECK(lockstep_generate(s, smp, 0, ids, n_ids, 3, NULL, NULL, &r) == LOCKSTEP_OK);
    CHECK(r.n_reused == 22 && r.n_evaluated == 9 && r.n_generated == 3);
    /* The same prompt again: held whole, nothing encoded. */
    CHECK(lockstep_vision_prompt(v, s, 0, text, strlen(text), 1, imgs, lens, 1, ids, 256, &n_ids, &n_enc) == LOCKSTEP_OK && n_enc == 0);
    /* An image tag the sequence does not hold is no token. */
    ids[0] = ids[6];
    ERR(lockstep_generate(s, smp, 0, ids, n_ids, 3, NULL, NULL, &r), LOCKSTEP_ERR_OUT_OF_RANGE, "");
    lens[0] = 200;
    ERR(lockstep_vision_prompt(v, s, 0, text, strlen(text), 1, imgs, lens, 1, ids, 256, &n_ids, &n_enc), LOCKSTEP_ERR_FORMAT, "truncated");
    lens[0] = n_png;
    ERR(lockstep_vision_prompt(v, s, 0, "<__media__><__media__>", 22, 1, imgs, lens, 1, ids, 256, &n_ids, &n_enc), LOCKSTEP_ERR_INVALID_ARGUMENT,
        "image markers");
    ERR(lockstep_vision_prompt(v, s, 0, text, strlen(text), 1, imgs, lens, 1, ids, 8, &n_ids, &n_enc), LOCKSTEP_ERR_TOO_LONG, "");
    CHECK(n_ids == 31);
    lockstep_sampler_free(smp);
    lockstep_session_free(s);
    lockstep_vision_free(v);
    lockstep_vision_free(NULL);
    free(png);
    lockstep_model_free(other);
    lockstep_model_free(g);
}

int main(int argc, char** argv) {
    lockstep_model *m, *hybrid, *templated;
    if (argc != 6) {
        fprintf(stderr, "usage: capi_test DATA_DIR TMP_DIR HYBRID.gguf TEMPLATED.gguf TEMPLATE.jinja\n");
        return 2;
    }
    snprintf(data_dir, sizeof data_dir, "%s", argv[1]);
    snprintf(tmp_dir, sizeof tmp_dir, "%s", argv[2]);
    test_versions();
    test_load_errors(path_in(data_dir, "gemma4_tiny.gguf"));
    m = load(path_in(data_dir, "gemma4_tiny.gguf"));
    hybrid = load(argv[3]);
    templated = load(argv[4]);
    test_model_info(m);
    test_tokens(m);
    test_sessions(m);
    test_decode(m);
    test_generate(m);
    test_sequences(m);
    test_state(m, hybrid);
    test_hybrid(hybrid);
    test_embed(m, path_in(data_dir, "bert_tiny.gguf"));
    test_sampler(m, hybrid);
    test_grammar(m);
    test_chat(m, templated, argv[5]);
    test_tools(m);
    test_reply_reader(m);
    test_vocab_only(path_in(data_dir, "gemma4_tiny.gguf"), m, hybrid);
    test_lifetimes(path_in(data_dir, "gemma4_tiny.gguf"));
    test_vision();
    lockstep_model_free(templated);
    lockstep_model_free(hybrid);
    lockstep_model_free(m);
    printf("capi_test: %d checks, %d failed\n", n_checks, n_failed);
    return n_failed ? 1 : 0;
}
