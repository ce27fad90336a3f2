// Command-line options of the lockstep CLI. Flag names follow llama.cpp where the same
// thing exists, so users' habits carry over.
#pragma once
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/quant/dtype.h"
#include "core/sched/placement.h"

namespace ls::cli {

struct UsageError : std::runtime_error {
    using std::runtime_error::runtime_error;
};

struct Options {
    std::string command;
    std::string model;            // -m; empty: the default model
    std::string prompt;           // -p
    std::string file;             // -f
    std::string mmproj;           // --mmproj: a projector (vision encoder) file
    int64_t image_min_tokens = 0, image_max_tokens = 0;  // --image-min-tokens / --image-max-tokens (0: the file's)
    std::vector<std::string> images;  // --image (repeatable)
    bool prompt_set = false;
    int64_t n_predict = 128;      // -n
    int64_t n_ctx = 4096;         // -c
    int64_t n_batch = 2048;       // -b
    int64_t n_ubatch = 512;       // -ub
    int threads = 0;              // -t
    float temp = 0.8f, top_p = 0.95f, min_p = 0.05f, repeat_penalty = 1.0f;
    int top_k = 40;
    uint64_t seed = 0xC0FFEE;     // --seed
    // Constrained output (llama.cpp's flags): GBNF text, or a JSON schema it is made from.
    std::string grammar;          // --grammar, --grammar-file
    std::string json_schema;      // -j/--json-schema, --json-schema-file
    bool seed_set = false;
    int64_t chunks = -1;          // --chunks (perplexity); -1: all
    std::string kld_base;         // --kl-divergence-base / --save-all-logits (perplexity)
    DType type_k = DType::F16, type_v = DType::F16;
    std::string backend = "cpu";  // --backend
    int device = 0;               // --device N: --backend's device
    // Placement over several devices (issue 31), llama.cpp's flags: --device cuda0,cuda1
    // (names), -ngl, --split-mode, --tensor-split, -ot, --cpu-moe, --n-cpu-moe.
    std::vector<std::string> devices;
    PlacementFlags placement;
    int mmap = -1;                // --mmap (1) / --no-mmap (0); -1: copy if it fits in half the free memory
    // bench: -p and -n take comma-separated lists; -r repetitions
    std::vector<int64_t> bench_pp{512}, bench_tg{128};
    std::vector<int64_t> bench_depth{0};           // -d: tokens in the context before each pp/tg test (untimed)
    std::vector<int64_t> bench_prefill_vs_single;  // prompt sizes timed chunked and token by token
    std::vector<int64_t> bench_tg_seqs;            // sequence counts decoded together (aggregate t/s)
    int64_t bench_scan_vs_single = 0;
    int64_t bench_spec_vs_plain = 0;               // tokens generated with and without speculation              // timed rounds of the batched vs single-sequence scan
    int reps = 5;
    std::string system;           // chat: --system
    // speculative decoding (run, chat, bench): --spec, -md, --draft-max, --draft-min
    std::string spec = "lookup";
    std::string draft_model;
    int draft_max = 16, draft_min = 0;
    bool spec_set = false;
    // serve
    std::string host = "127.0.0.1";  // --host
    int port = 8080;                 // --port
    int n_parallel = 1;              // -np: slots
    std::string api_key;             // --api-key
    int max_queue = 64;              // --max-queue
    int timeout_s = 600;             // --timeout
    int read_timeout_s = 10;         // --read-timeout
    std::string cors_origin;         // --cors-origin (empty: no CORS headers)
    std::string chat_template;       // --chat-template-file (its text)
    std::string chat_template_name;  // --chat-template-name: tokenizer.chat_template.<name>
    int64_t max_body_mib = 16;       // --max-body
    // embed (and serve's /v1/embeddings): llama-embedding's flags
    std::vector<std::string> prompts;  // embed: every -p, in order
    std::string pooling;               // --pooling none|mean|cls|last ("": the GGUF's)
    int embd_normalize = 2;            // --embd-normalize: -1 none, 0 max-abs int16, 1 taxicab, 2 euclidean, >2 p-norm
    std::string embd_output_format;    // --embd-output-format: "" (plain lines), json, array
    bool help = false;
};

// Parses argv[1..]: the first word is the command. Throws UsageError naming the problem.
Options parse_args(int argc, char** argv);
std::string usage(const std::string& command = "");

}  // namespace ls::cli
