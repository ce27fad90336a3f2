#include "tools/cli/cli_args.h"

#include <algorithm>
#include <charconv>
#include <fstream>
#include <set>
#include <sstream>

namespace ls::cli {
namespace {

std::string read_text_file(const std::string& flag, const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw UsageError(flag + ": cannot read '" + path + "'");
    std::ostringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

const std::set<std::string> kCommands = {"run", "chat", "perplexity", "bench", "info", "devices", "serve", "embed"};

template <class T> T parse_number(const std::string& flag, const std::string& v) {
    T out{};
    const char* b = v.data();
    const char* e = v.data() + v.size();
    std::from_chars_result r;
    if constexpr (std::is_floating_point_v<T>) {
        try {
            size_t used = 0;
            out = T(std::stod(v, &used));
            if (used != v.size()) throw std::invalid_argument(v);
            return out;
        } catch (const std::exception&) {
            throw UsageError(flag + " expects a number, got '" + v + "'");
        }
    } else {
        r = std::from_chars(b, e, out);
        if (r.ec != std::errc() || r.ptr != e) throw UsageError(flag + " expects an integer, got '" + v + "'");
    }
    return out;
}

std::vector<int64_t> parse_list(const std::string& flag, const std::string& v) {
    std::vector<int64_t> out;
    std::stringstream ss(v);
    std::string item;
    while (std::getline(ss, item, ',')) {
        int64_t n = parse_number<int64_t>(flag, item);
        if (n < 0) throw UsageError(flag + " values must be >= 0, got " + item);
        out.push_back(n);
    }
    if (out.empty()) throw UsageError(flag + " expects a comma-separated list of sizes");
    return out;
}

DType parse_cache_type(const std::string& flag, const std::string& v) {
    static const std::set<std::string> ok = {"f32", "f16", "q8_0", "q4_0"};
    if (!ok.count(v)) throw UsageError(flag + " must be one of f32, f16, q8_0, q4_0; got '" + v + "'");
    return dtype_from_name(v);
}

}  // namespace

Options parse_args(int argc, char** argv) {
    Options o;
    if (argc < 2) throw UsageError("no command given");
    o.command = argv[1];
    if (o.command == "-h" || o.command == "--help" || o.command == "help") {
        o.help = true;
        o.command.clear();
        return o;
    }
    if (!kCommands.count(o.command)) throw UsageError("unknown command '" + o.command + "'");
    const bool bench = o.command == "bench";
    const bool serve = o.command == "serve";
    const bool embed = o.command == "embed";
    for (int i = 2; i < argc; ++i) {
        const std::string a = argv[i];
        auto value = [&]() -> std::string {
            if (i + 1 >= argc) throw UsageError(a + " needs a value");
            return argv[++i];
        };
        auto positive = [&](int64_t n) {
            if (n <= 0) throw UsageError(a + " must be positive, got " + std::to_string(n));
            return n;
        };
        if (a == "-h" || a == "--help") o.help = true;
        else if (a == "-m" || a == "--model") o.model = value();
        else if ((a == "-p" || a == "--prompt") && bench) o.bench_pp = parse_list(a, value());
        else if ((a == "-p" || a == "--prompt") && embed) { o.prompts.push_back(value()); o.prompt_set = true; }
        else if (a == "-p" || a == "--prompt") { o.prompt = value(); o.prompt_set = true; }
        else if (a == "-f" || a == "--file") o.file = value();
        else if (a == "--mmproj" || a == "-mm") o.mmproj = value();
        else if (a == "--image") o.images.push_back(value());
        else if (a == "--image-min-tokens") o.image_min_tokens = positive(parse_number<int64_t>(a, value()));
        else if (a == "--image-max-tokens") o.image_max_tokens = positive(parse_number<int64_t>(a, value()));
        else if ((a == "-n" || a == "--n-predict" || a == "--n-gen") && bench) o.bench_tg = parse_list(a, value());
        else if ((a == "-d" || a == "--n-depth") && bench) o.bench_depth = parse_list(a, value());
        else if (a == "--prefill-vs-single" && bench) o.bench_prefill_vs_single = parse_list(a, value());
        else if (a == "--tg-seqs" && bench) o.bench_tg_seqs = parse_list(a, value());
        else if (a == "--spec-vs-plain" && bench) o.bench_spec_vs_plain = parse_list(a, value()).at(0);
        else if (a == "--scan-vs-single" && bench) o.bench_scan_vs_single = parse_list(a, value()).at(0);
        else if (a == "-n" || a == "--n-predict") o.n_predict = parse_number<int64_t>(a, value());
        else if (a == "-c" || a == "--ctx-size") o.n_ctx = positive(parse_number<int64_t>(a, value()));
        else if (a == "-b" || a == "--batch-size") o.n_batch = positive(parse_number<int64_t>(a, value()));
        else if (a == "-ub" || a == "--ubatch-size") o.n_ubatch = positive(parse_number<int64_t>(a, value()));
        else if (a == "-t" || a == "--threads") o.threads = int(positive(parse_number<int64_t>(a, value())));
        else if (a == "--temp") o.temp = parse_number<float>(a, value());
        else if (a == "--top-k") o.top_k = int(parse_number<int64_t>(a, value()));
        else if (a == "--top-p") o.top_p = parse_number<float>(a, value());
        else if (a == "--min-p") o.min_p = parse_number<float>(a, value());
        else if (a == "--repeat-penalty") o.repeat_penalty = parse_number<float>(a, value());
        else if (a == "--seed") { o.seed = parse_number<uint64_t>(a, value()); o.seed_set = true; }
        else if (a == "--grammar") o.grammar = value();
        else if (a == "--grammar-file") o.grammar = read_text_file(a, value());
        else if (a == "-j" || a == "--json-schema") o.json_schema = value();
        else if (a == "--json-schema-file") o.json_schema = read_text_file(a, value());
        else if (a == "--chunks") o.chunks = positive(parse_number<int64_t>(a, value()));
        else if (a == "--kl-divergence-base" || a == "--save-all-logits") o.kld_base = value();
        else if (a == "-ctk" || a == "--cache-type-k") o.type_k = parse_cache_type(a, value());
        else if (a == "-ctv" || a == "--cache-type-v") o.type_v = parse_cache_type(a, value());
        else if (a == "--backend") {
            o.backend = value();
            if (o.backend != "cpu" && o.backend != "vulkan" && o.backend != "cuda" && o.backend != "reference")
                throw UsageError("--backend must be cpu, vulkan or cuda; got '" + o.backend + "'");
        }
        else if (a == "--device" || a == "-dev") {
            // An index into --backend's devices, or a list of device names (llama.cpp's form).
            const std::string v = value();
            if (!v.empty() && v.find_first_not_of("0123456789") == std::string::npos) {
                o.device = int(parse_number<int64_t>(a, v));
            } else {
                o.devices.clear();
                std::stringstream ss(v);
                std::string item;
                while (std::getline(ss, item, ',')) {
                    if (item.empty()) throw UsageError(a + " expects device names separated by commas (cuda0,cuda1), got '" + v + "'");
                    if (item != "none") o.devices.push_back(item);
                }
                if (o.devices.empty()) o.devices.push_back("cpu");  // --device none: the CPU alone
            }
        }
        else if (a == "-ngl" || a == "--n-gpu-layers" || a == "--gpu-layers") {
            const std::string v = value();
            if (v == "all") o.placement.n_gpu_layers = PlacementFlags::kAll;
            else if (v == "auto") o.placement.n_gpu_layers = PlacementFlags::kAuto;
            else {
                const int64_t n = parse_number<int64_t>(a, v);
                if (n < 0) throw UsageError(a + " must be a count of layers >= 0, 'all' or 'auto'; got '" + v + "'");
                o.placement.n_gpu_layers = int(std::min<int64_t>(n, 1 << 20));
            }
        }
        else if (a == "-sm" || a == "--split-mode") {
            const std::string v = value();
            o.placement.split_layers = v != "none";
            o.placement.split_rows = v == "row";
            if (v == "tensor")
                throw UsageError(a + " tensor (heads and FFN units over the GPUs) is not built; row splits each layer's matrices "
                                      "by output rows (README, 'Tensor parallelism')");
            if (v != "none" && v != "layer" && v != "row") throw UsageError(a + " must be none, layer or row, got '" + v + "'");
        }
        else if (a == "-ts" || a == "--tensor-split") {
            // "3,1" or llama.cpp's "3/1".
            std::string v = value();
            for (char& c : v)
                if (c == '/') c = ',';
            std::stringstream ss(v);
            std::string item;
            o.placement.tensor_split.clear();
            while (std::getline(ss, item, ',')) {
                const double x = parse_number<double>(a, item);
                if (!(x >= 0)) throw UsageError(a + " shares must be >= 0, got '" + item + "'");
                o.placement.tensor_split.push_back(x);
            }
            if (o.placement.tensor_split.empty()) throw UsageError(a + " expects shares such as 3,1");
        }
        else if (a == "-ot" || a == "--override-tensor") {
            std::stringstream ss(value());
            std::string item;
            while (std::getline(ss, item, ',')) {
                const size_t eq = item.rfind('=');
                if (eq == std::string::npos || eq == 0 || eq + 1 == item.size())
                    throw UsageError(a + " expects PATTERN=DEVICE (e.g. 'ffn_.*_exps=cpu'), got '" + item + "'");
                o.placement.overrides.emplace_back(item.substr(0, eq), item.substr(eq + 1));
            }
        }
        else if (a == "-cmoe" || a == "--cpu-moe") o.placement.cpu_moe = true;
        else if (a == "-ncmoe" || a == "--n-cpu-moe") o.placement.n_cpu_moe = int(std::min<int64_t>(parse_number<int64_t>(a, value()), 1 << 20));
        else if (a == "--mmap") o.mmap = 1;
        else if (a == "--no-mmap") o.mmap = 0;
        else if (a == "-r" || a == "--repetitions") o.reps = int(positive(parse_number<int64_t>(a, value())));
        else if (a == "--system") o.system = value();
        else if (a == "--spec") {
            o.spec = value();
            o.spec_set = true;
            if (o.spec != "off" && o.spec != "lookup" && o.spec != "draft")
                throw UsageError("--spec must be off, lookup or draft; got '" + o.spec + "'");
        }
        else if (a == "-md" || a == "--model-draft") o.draft_model = value();
        // llama.cpp's older names and its newer --spec-draft-n-max / --spec-draft-n-min.
        else if (a == "--draft-max" || a == "--draft" || a == "--draft-n" || a == "--spec-draft-n-max") {
            const int64_t n = parse_number<int64_t>(a, value());
            if (n < 0 || n > 256) throw UsageError(a + " must be in [0, 256], got " + std::to_string(n));
            o.draft_max = int(n);
        }
        else if (a == "--draft-min" || a == "--draft-n-min" || a == "--spec-draft-n-min") {
            const int64_t n = parse_number<int64_t>(a, value());
            if (n < 0 || n > 256) throw UsageError(a + " must be in [0, 256], got " + std::to_string(n));
            o.draft_min = int(n);
        }
        else if (a == "--pooling" && (serve || embed)) {
            o.pooling = value();
            if (o.pooling != "none" && o.pooling != "mean" && o.pooling != "cls" && o.pooling != "last")
                throw UsageError("--pooling must be none, mean, cls or last; got '" + o.pooling + "'");
        }
        else if (a == "--embd-normalize" && (serve || embed)) {
            const int64_t n = parse_number<int64_t>(a, value());
            if (n < -1 || n > 64) throw UsageError("--embd-normalize must be -1 (none), 0 (max-abs int16), 1 (taxicab), 2 (euclidean) or a p-norm up to 64; got " + std::to_string(n));
            o.embd_normalize = int(n);
        }
        else if (a == "--embd-output-format" && embed) {
            o.embd_output_format = value();
            if (o.embd_output_format != "json" && o.embd_output_format != "array")
                throw UsageError("--embd-output-format must be json or array; got '" + o.embd_output_format + "'");
        }
        else if (a == "--host" && serve) o.host = value();
        else if (a == "--port" && serve) {
            const int64_t port = parse_number<int64_t>(a, value());
            if (port < 0 || port > 65535) throw UsageError("--port must be in [0, 65535], got " + std::to_string(port));
            o.port = int(port);
        }
        else if ((a == "-np" || a == "--parallel") && serve) {
            const int64_t n = positive(parse_number<int64_t>(a, value()));
            if (n > 256) throw UsageError(a + " must be at most 256, got " + std::to_string(n));
            o.n_parallel = int(n);
        }
        else if (a == "--chat-template-file") o.chat_template = read_text_file(a, value());
        else if (a == "--chat-template-name") o.chat_template_name = value();
        else if (a == "--cors-origin" && serve) {
            o.cors_origin = value();
            if (o.cors_origin.empty() || o.cors_origin.find_first_of(" \r\n,") != std::string::npos)
                throw UsageError("--cors-origin must be one origin (https://app.example) or *, got '" + o.cors_origin + "'");
        }
        else if (a == "--max-body" && serve) {
            o.max_body_mib = parse_number<int64_t>(a, value());
            if (o.max_body_mib < 1 || o.max_body_mib > 4096) throw UsageError("--max-body must be in [1, 4096] MiB, got " + std::to_string(o.max_body_mib));
        }
        else if (a == "--api-key" && serve) {
            o.api_key = value();
            if (o.api_key.empty()) throw UsageError("--api-key must not be empty");
        }
        else if (a == "--max-queue" && serve) {
            const int64_t n = parse_number<int64_t>(a, value());
            if (n < 0 || n > 4096) throw UsageError("--max-queue must be in [0, 4096], got " + std::to_string(n));
            o.max_queue = int(n);
        }
        else if ((a == "--timeout" || a == "-to") && serve) o.timeout_s = int(positive(parse_number<int64_t>(a, value())));
        else if (a == "--read-timeout" && serve) {
            const int64_t s = parse_number<int64_t>(a, value());
            if (s < 1 || s > 3600) throw UsageError("--read-timeout must be in [1, 3600] seconds, got " + std::to_string(s));
            o.read_timeout_s = int(s);
        }
        else throw UsageError("unknown option '" + a + "' for '" + o.command + "'");
    }
    if (o.placement.n_cpu_moe < 0) throw UsageError("--n-cpu-moe must be >= 0, got " + std::to_string(o.placement.n_cpu_moe));
    if (o.temp < 0) throw UsageError("--temp must be >= 0");
    if (o.top_p <= 0 || o.top_p > 1) throw UsageError("--top-p must be in (0, 1]");
    if (o.min_p < 0 || o.min_p > 1) throw UsageError("--min-p must be in [0, 1]");
    if (o.n_predict < -1) throw UsageError("-n must be >= -1 (-1: until the end of generation)");
    // -md alone picks draft speculation; draft speculation needs -md.
    if (!o.draft_model.empty() && !o.spec_set) o.spec = "draft";
    if (o.spec == "draft" && o.draft_model.empty()) throw UsageError("--spec draft needs a draft model: -md FILE");
    if (!o.draft_model.empty() && o.spec != "draft") throw UsageError("-md is used with --spec draft only, not --spec " + o.spec);
    if (o.draft_min > o.draft_max)
        throw UsageError("--draft-min (" + std::to_string(o.draft_min) + ") must not exceed --draft-max (" + std::to_string(o.draft_max) + ")");
    return o;
}

std::string usage(const std::string& command) {
    std::string common =
        "  -m, --model FILE        GGUF model (default: Gemma 3 270M Q4_K_M, fetched by tools/scripts/fetch_model.sh)\n"
        "  -c, --ctx-size N        context size (default 4096)\n"
        "  -b, --batch-size N      logical batch (default 2048)\n"
        "  -ub, --ubatch-size N    tokens per graph run (default 512)\n"
        "  -t, --threads N         CPU threads (default: all cores)\n"
        "  -ctk, --cache-type-k T  K cache type: f32, f16, q8_0, q4_0 (default f16)\n"
        "  -ctv, --cache-type-v T  V cache type (default f16)\n"
        "  --backend NAME          cpu | vulkan | cuda (default cpu)\n"
        "  --device N              device index for GPU backends (default 0)\n"
        "  --device LIST           devices by name, e.g. cuda0,cuda1 or vulkan0 (lockstep devices lists them)\n"
        "  -ngl, --n-gpu-layers N  layers on the GPU devices, counted from the last (the output head\n"
        "                          counts as one); the rest on the CPU; all (default) or auto (as many\n"
        "                          as fit the free memory beside the KV cache)\n"
        "  -sm, --split-mode M     layer (default: layers spread over the GPU devices), none (the first),\n"
        "                          or row (layers on the first, each matrix's rows over the GPU devices)\n"
        "  -ts, --tensor-split S   shares of the layers (row: of each matrix's rows) per GPU device, e.g. 3,1\n"
        "                          (default: by free memory)\n"
        "  -ot, --override-tensor PATTERN=DEVICE  tensors whose name matches the regex go to DEVICE\n"
        "                          (e.g. 'ffn_.*_exps=cpu'); the first matching pattern wins\n"
        "  --cpu-moe, --n-cpu-moe N  every layer's MoE experts (or those of layers 0..N-1) in host memory\n"
        "                          every placement gives the same logits, bit for bit, as one device\n"
        "  --mmap, --no-mmap       CPU: use the file's mapping in place, or copy the weights into\n"
        "                          huge-page memory (faster decode); default: copy if the file\n"
        "                          takes at most half of the available memory\n";
    std::string sampling =
        "  -n, --n-predict N       tokens to generate (default 128; -1: until end of generation)\n"
        "  --temp T                temperature, 0 = greedy (default 0.8)\n"
        "  --top-k N, --top-p P, --min-p P, --repeat-penalty R, --seed S\n"
        "  --grammar GBNF, --grammar-file F   output constrained by a GBNF grammar (llama.cpp's syntax)\n"
        "  -j, --json-schema S, --json-schema-file F   output constrained to JSON valid under schema S\n"
        "  --spec MODE             speculative decoding: off | lookup (default: guesses from earlier\n"
        "                          text of the sequence) | draft (guesses from -md); output is identical\n"
        "                          to --spec off, token for token\n"
        "  -md, --model-draft FILE draft model with the same vocabulary (implies --spec draft)\n"
        "  --draft-max N           most guesses checked per step (default 16; adapts to the acceptance;\n"
        "                          also --spec-draft-n-max)\n"
        "  --draft-min N           fewer guesses than this are not checked (default 0; --spec-draft-n-min)\n";
    if (command == "run")
        return "usage: lockstep run [-m FILE] -p PROMPT | -f FILE [--mmproj FILE --image FILE ...] [options]\n"
               "  --mmproj FILE           the model's projector (vision encoder) file, as llama.cpp's converter\n"
               "                          writes it (Gemma 3, Gemma 4, Qwen3.5)\n"
               "  --image FILE            a PNG or JPEG for the prompt (repeatable, needs --mmproj): each goes\n"
               "                          where the prompt says <__media__>, or before the text\n"
               "  --image-min-tokens N, --image-max-tokens N\n"
               "                          the tokens an image may take, for projectors that keep an image's own\n"
               "                          resolution (Qwen3.5: default the file's, else 64 and 4096; Gemma 4: the\n"
               "                          maximum is its budget, default 280; also chat, serve)\n" + common + sampling;
    if (command == "chat")
        return "usage: lockstep chat [-m FILE] [--system TEXT] [options]\n"
               "  interactive multi-turn chat with the model's chat template; /exit or EOF ends it\n" + common + sampling;
    if (command == "perplexity")
        return "usage: lockstep perplexity [-m FILE] -f TEXTFILE [-c N] [--chunks N] [--kl-divergence-base OUT] [options]\n"
               "  --kl-divergence-base OUT  also write every scored token's log-probabilities to OUT in llama.cpp's\n"
               "                            format (llama-perplexity --kl-divergence reads it; alias --save-all-logits)\n" + common;
    if (command == "bench")
        return "usage: lockstep bench [-m FILE] [-p 512,...] [-n 128,...] [-d 0,...] [-r REPS] [options]\n"
               "  -p LIST  prompt sizes (pp tests); -n LIST  generation lengths (tg tests); -r N  repetitions (5)\n"
               "  -d LIST  depths (0): each pp/tg test runs after DEPTH random tokens already fill the\n"
               "           context; the fill is not timed (rows 'tg64 @ d4096', as llama-bench prints)\n"
               "  --prefill-vs-single LIST  prompt sizes evaluated both in ubatches and one token per step,\n"
               "                           with the speed ratio (one repetition each: long prompts are slow)\n"
               "  --tg-seqs LIST  sequence counts decoded together (one token of each per step, 64 steps\n"
               "                  after a 16-token prompt each): aggregate t/s and the ratio to the first\n"
               "  --scan-vs-single N  CPU: N rounds of one decode step of the delta-rule scan (Qwen3.5\n"
               "                      sizes), the batched op vs its single-sequence-only twin\n"
               "  --spec-vs-plain N  generate N tokens on a copy-heavy prompt and on prose (greedy), and on the\n"
               "                     prose sampled (temperature 0.8, seed 5), with\n"
               "                     speculation (--spec, -md, --draft-max, --draft-min) and without, alternating:\n"
               "                     tokens/s of each, the ratio and the acceptance rate\n" + common;
    if (command == "serve")
        return "usage: lockstep serve [-m FILE] [--host H] [--port N] [-np N] [options]\n"
               "  an OpenAI-compatible HTTP server: POST /v1/completions, /v1/chat/completions (streamed with\n"
               "  \"stream\": true), /tokenize, /detokenize; GET /v1/models, /health, /metrics\n"
               "  --host H                address to listen on (default 127.0.0.1)\n"
               "  --port N                port (default 8080; 0: any free port, printed at start)\n"
               "  -np, --parallel N       slots: requests served at once (default 1)\n"
               "  -c, --ctx-size N        context of EACH slot, prompt plus reply (default 4096)\n"
               "  --api-key KEY           require 'Authorization: Bearer KEY' (GET /health excepted)\n"
               "  --max-queue N           requests that may wait for a slot (default 64); more get 503\n"
               "                          with Retry-After\n"
               "  --timeout S             how long a write may wait for a client that does not read (default 600)\n"
               "  --read-timeout S        a request's headers and body must arrive within S seconds (default 10);\n"
               "                          idle and slow connections wait off the worker threads until then\n"
               "  --max-body MIB          largest request body (default 16); more get 413\n"
               "  --chat-template-file F  render chats with this Jinja template instead of the model's own\n"
               "                          (tokenizer.chat_template; without one, a built-in table by architecture)\n"
               "  --chat-template-name N  the model file's named template tokenizer.chat_template.N (e.g. tool_use)\n"
               "  --cors-origin ORIGIN    let browser apps from ORIGIN (or *) call the API: CORS headers, and\n"
               "                          OPTIONS preflights answered before the key check (default: none)\n"
               "  --temp, --top-k, --top-p, --min-p, --repeat-penalty: defaults for what a request leaves out\n"
               "  --spec off|lookup       while at most 2 slots are busy, generating slots check guesses from\n"
               "                          prompt lookup (default lookup; answers are identical either way)\n"
               "  --draft-max N, --draft-min N  as for run\n"
               "  POST /v1/embeddings (and /embeddings): OpenAI's request (input: a string, strings, token ids\n"
               "  or lists of them; encoding_format float|base64; dimensions), pooled as the GGUF's\n"
               "  <arch>.pooling_type says, or:\n"
               "  --pooling P             none | mean | cls | last: the pooling (default: the GGUF's; a file\n"
               "                          without the key has none, and /v1/embeddings refuses)\n"
               "  --embd-normalize N      -1 none, 0 max-abs int16, 1 taxicab, 2 euclidean (default), >2 p-norm\n"
               "  each step evaluates at most -ub tokens: one token of every generating slot, then prompt\n"
               "  chunks, oldest request first\n" + common;
    if (command == "embed")
        return "usage: lockstep embed [-m FILE] -p TEXT [-p TEXT ...] | -f FILE [options]\n"
               "  prints one embedding per text: the final normalized hidden states, pooled and normalized\n"
               "  -p TEXT                 a text (repeatable); -f FILE: one text per line\n"
               "  --pooling P             none | mean | cls | last (default: the GGUF's <arch>.pooling_type;\n"
               "                          a file without the key has none, which is refused)\n"
               "  --embd-normalize N      -1 none, 0 max-abs int16, 1 taxicab, 2 euclidean (default), >2 p-norm\n"
               "  --embd-output-format F  json (OpenAI's shape) | array ([[...],...]); default: one line of\n"
               "                          numbers per text\n" + common;
    if (command == "info")
        return "usage: lockstep info [-m FILE] [--device LIST] [-ngl N] [placement options]\n"
               "  model metadata, tensor types and, with placement options, the plan: layers and bytes per device\n" + common;
    if (command == "devices") return "usage: lockstep devices\n  every device of every backend in this build (what --backend B --device N picks)\n";
    return "usage: lockstep COMMAND [options]\n"
           "commands:\n"
           "  run         generate text from a prompt\n"
           "  chat        interactive chat\n"
           "  perplexity  perplexity of a text file\n"
           "  bench       prompt-processing and generation speed\n"
           "  info        model metadata, tensor types, memory\n"
           "  devices     the devices each backend can run on\n"
           "  serve       OpenAI-compatible HTTP server with continuous batching\n"
           "  embed       embeddings of texts\n"
           "'lockstep COMMAND --help' shows a command's options.\n";
}

}  // namespace ls::cli
