/* The smallest complete use of lockstep's C API: load a model, tokenize a prompt, generate
 * greedily, print the prompt and what follows it (as `lockstep run --temp 0` does).
 *
 *   simple MODEL.gguf [PROMPT] [N_TOKENS]
 *
 * Built against the installed library: with CMake (find_package(lockstep), CMakeLists.txt
 * here) or with pkg-config (Makefile here). */
#include <lockstep.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int fail(const char* what, int status) {
    fprintf(stderr, "simple: %s failed: %s (%s)\n", what, lockstep_last_error(), lockstep_status_name(status));
    return 1;
}

/* Each generated token's bytes, as they come. */
static int32_t print_piece(void* user_data, int32_t token, const char* piece, int32_t len) {
    (void)user_data;
    (void)token;
    fwrite(piece, 1, (size_t)len, stdout);
    fflush(stdout);
    return 0; /* go on */
}

int main(int argc, char** argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: simple MODEL.gguf [PROMPT] [N_TOKENS]\n");
        return 2;
    }
    const char* prompt = argc > 2 ? argv[2] : "The history of the printing press";
    const int32_t n_predict = argc > 3 ? atoi(argv[3]) : 32;
    if (lockstep_api_version() != LOCKSTEP_API_VERSION) {
        fprintf(stderr, "simple: built for API version %d, the library has %d\n", LOCKSTEP_API_VERSION, (int)lockstep_api_version());
        return 1;
    }

    lockstep_model* model = NULL;
    int rc = lockstep_model_load(argv[1], NULL, &model);
    if (rc != LOCKSTEP_OK) return fail("loading the model", rc);

    /* Ask for the size first, then tokenize into a buffer of that size. */
    int32_t n_tokens = 0;
    const size_t len = strlen(prompt);
    rc = lockstep_tokenize(model, prompt, len, lockstep_model_add_bos(model), 1, NULL, 0, &n_tokens);
    if (rc != LOCKSTEP_OK && rc != LOCKSTEP_ERR_BUFFER_TOO_SMALL) return fail("tokenizing", rc);
    int32_t* tokens = malloc(sizeof(int32_t) * (size_t)(n_tokens > 0 ? n_tokens : 1));
    rc = lockstep_tokenize(model, prompt, len, lockstep_model_add_bos(model), 1, tokens, n_tokens, &n_tokens);
    if (rc != LOCKSTEP_OK) return fail("tokenizing", rc);

    lockstep_session_params sp = lockstep_session_default_params();
    sp.n_ctx = 256;
    lockstep_session* session = NULL;
    rc = lockstep_session_new(model, &sp, &session);
    if (rc != LOCKSTEP_OK) return fail("making a session", rc);

    lockstep_sampler_params gp = lockstep_sampler_default_params();
    gp.temp = 0.0f; /* greedy */
    lockstep_sampler* sampler = NULL;
    rc = lockstep_sampler_new(model, &gp, &sampler);
    if (rc != LOCKSTEP_OK) return fail("making a sampler", rc);

    fputs(prompt, stdout);
    lockstep_generate_result r;
    rc = lockstep_generate(session, sampler, 0, tokens, n_tokens, n_predict, print_piece, NULL, &r);
    if (rc != LOCKSTEP_OK) return fail("generating", rc);
    printf("\n");
    fprintf(stderr, "simple: %d prompt tokens, %d generated (end: %d)\n", (int)n_tokens, (int)r.n_generated, (int)r.end_reason);

    lockstep_sampler_free(sampler);
    lockstep_session_free(session);
    lockstep_model_free(model);
    free(tokens);
    return 0;
}
