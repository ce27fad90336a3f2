// lockstep-make-test-model: writes a tiny Gemma 3 GGUF with random weights (see
// tests/support/tiny_gguf.h), for tests and for trying the engine without a real model; or,
// with --shape, a random-weight file of a real model's shapes and types, for speed runs
// where the real file cannot travel (tests/support/shaped_gguf.h).
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <fstream>
#include <iterator>
#include <limits>
#include <stdexcept>
#include <string>
#include <thread>

#include "core/gguf/gguf.h"
#include "tests/support/gguf_edit.h"
#include "tests/support/shaped_gguf.h"
#include "tests/support/tiny_gguf.h"

namespace {

const char* kUsage =
    "usage: lockstep-make-test-model --out FILE [options]\n"
    "  --out FILE        where to write the GGUF (required)\n"
    "  --layers N        transformer blocks (default 3; layer il is windowed when il % 6 < 5)\n"
    "  --embd N          embedding width (default 64)\n"
    "  --heads N         query heads (default 2)\n"
    "  --kv-heads N      key/value heads (default 1)\n"
    "  --head-dim N      head size (default 32)\n"
    "  --ff N            feed-forward width (default 128)\n"
    "  --vocab N         vocabulary size, >= 262 (default 300)\n"
    "  --window N        sliding window of the windowed layers (default 8; 0: none)\n"
    "  --ctx N           training context length (default 256)\n"
    "  --pooling N       write gemma3.pooling_type N (0 none, 1 mean, 2 cls, 3 last; default: no key)\n"
    "  --type T          matmul weight type: f32 f16 bf16 q4_0 q4_1 q5_0 q5_1 q8_0 q2_k..q6_k iq4_nl\n"
    "                    iq4_xs mxfp4 tq1_0 tq2_0 (default q8_0)\n"
    "  --seed N          random seed (default 1)\n"
    "  --vocab-for FILE  instead: copy FILE's model (any architecture) with the tiny vocabulary as\n"
    "                    its tokenizer, sized to its embedding rows (the tiny hybrids have none)\n"
    "  --requantize FILE instead: copy FILE (any model) with every matrix whose rows fit the\n"
    "                    --type's blocks (token embedding included) requantized to that type by the\n"
    "                    reference quantizers; the same FILE and type always give the same bytes\n"
    "  --tokens-for FILE instead: copy FILE's model and tokenizer with the tokens below put in its\n"
    "                    unused slots (or retyped where FILE has them): a vocabulary that holds a\n"
    "                    family's chat markers as the real model's does\n"
    "    --control TEXT      a control token (repeatable)\n"
    "    --user-token TEXT   a user-defined token, matched and shown as text (repeatable)\n"
    "    --bos/--eos/--eot TEXT  the token that is BOS, EOS or EOT (written as its id)\n"
    "    --chat-template FILE    tokenizer.chat_template from FILE\n"
    "    --ctx N                 <arch>.context_length N (the model's own without it)\n"
    "  --shape NAME      instead: random weights in a real model's shapes, with the types\n"
    "                    llama.cpp's Q4_K_M gives each matrix (--seed applies; the other options\n"
    "                    do not): gemma3-270m, gemma3-1b, llama3.2-1b, qwen3-8b, qwen3vl-4b\n"
    "    --mmproj FILE   also its projector (qwen3vl-4b: Qwen3-VL-4B's vision tower, F16)\n"
    "  --threads N       threads quantizing a --shape file (default: all cores; the bytes do\n"
    "                    not depend on it)\n"
    "Matmul row lengths (embd, heads*head-dim, ff) must be multiples of the type's block size\n"
    "(32 for q4_0..q8_0, iq4_nl and mxfp4, 256 for the k-quants, iq4_xs and the tq types).\n";

struct UsageError : std::runtime_error {
    using std::runtime_error::runtime_error;
};

uint64_t parse_u64(const std::string& flag, const std::string& v, uint64_t max) {
    if (v.empty() || v[0] == '-' || v[0] == '+') throw UsageError(flag + ": '" + v + "' is not a non-negative integer");
    size_t used = 0;
    unsigned long long x = 0;
    try {
        x = std::stoull(v, &used, 10);
    } catch (const std::exception&) {
        throw UsageError(flag + ": '" + v + "' is not a non-negative integer");
    }
    if (used != v.size()) throw UsageError(flag + ": '" + v + "' is not a non-negative integer");
    if (x > max) throw UsageError(flag + ": " + v + " is too large (at most " + std::to_string(max) + ")");
    return x;
}

}  // namespace

int main(int argc, char** argv) {
    ls::TinyGemma3Spec spec;
    std::string out, vocab_for, requantize, shape, tokens_for, mmproj;
    ls::test::VocabEdit vedit;
    int threads = int(std::max(1u, std::thread::hardware_concurrency()));
    try {
        for (int i = 1; i < argc; ++i) {
            const std::string flag = argv[i];
            if (flag == "-h" || flag == "--help") {
                std::fputs(kUsage, stdout);
                return 0;
            }
            if (flag.rfind("--", 0) != 0) throw UsageError("unexpected argument '" + flag + "'");
            if (i + 1 >= argc) throw UsageError(flag + " needs a value");
            const std::string v = argv[++i];
            const uint64_t kInt = uint64_t(std::numeric_limits<int>::max());
            auto as_int = [&] { return int(parse_u64(flag, v, kInt)); };
            if (flag == "--out") {
                if (v.empty()) throw UsageError("--out needs a file name");
                out = v;
            } else if (flag == "--vocab-for") vocab_for = v;
            else if (flag == "--requantize") requantize = v;
            else if (flag == "--tokens-for") tokens_for = v;
            else if (flag == "--control") vedit.tokens.emplace_back(v, 3);
            else if (flag == "--user-token") vedit.tokens.emplace_back(v, 4);
            else if (flag == "--bos") vedit.bos = v;
            else if (flag == "--eos") vedit.eos = v;
            else if (flag == "--eot") vedit.eot = v;
            else if (flag == "--chat-template") {
                std::ifstream in(v, std::ios::binary);
                if (!in) throw UsageError("--chat-template: cannot read '" + v + "'");
                vedit.chat_template = std::string(std::istreambuf_iterator<char>(in), {});
            }
            else if (flag == "--shape") shape = v;
            else if (flag == "--mmproj") mmproj = v;
            else if (flag == "--threads") {
                threads = as_int();
                if (threads < 1) throw UsageError("--threads must be at least 1");
            }
            else if (flag == "--layers") spec.n_layer = as_int();
            else if (flag == "--embd") spec.n_embd = as_int();
            else if (flag == "--heads") spec.n_head = as_int();
            else if (flag == "--kv-heads") spec.n_head_kv = as_int();
            else if (flag == "--head-dim") spec.head_dim = as_int();
            else if (flag == "--ff") spec.n_ff = as_int();
            else if (flag == "--vocab") spec.n_vocab = as_int();
            else if (flag == "--window") spec.window = as_int();
            else if (flag == "--ctx") spec.ctx = int(vedit.context_length = uint32_t(as_int()));
            else if (flag == "--pooling") spec.pooling = as_int();
            else if (flag == "--seed") spec.seed = parse_u64(flag, v, std::numeric_limits<uint64_t>::max());
            else if (flag == "--type") {
                try {
                    spec.wtype = ls::dtype_from_name(v);
                } catch (const std::exception& e) {
                    throw UsageError(std::string("--type: ") + e.what());
                }
            } else throw UsageError("unknown flag '" + flag + "'");
        }
        if (out.empty()) throw UsageError("--out FILE is required");
        if (!shape.empty()) (void)ls::find_model_shape(shape);
        if (!mmproj.empty() && (shape.empty() || !ls::has_shaped_mmproj(ls::find_model_shape(shape))))
            throw UsageError("--mmproj needs a --shape that has a projector (qwen3vl-4b)");
        const bool editing = !vedit.tokens.empty() || !vedit.bos.empty() || !vedit.eos.empty() || !vedit.eot.empty() ||
                             vedit.chat_template.has_value();
        if (editing && tokens_for.empty()) throw UsageError("--control, --user-token, --bos, --eos, --eot and --chat-template need --tokens-for");
        if (requantize.empty() && vocab_for.empty() && shape.empty() && tokens_for.empty()) ls::check_tiny_gemma3(spec);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "lockstep-make-test-model: %s\n\n%s", e.what(), kUsage);
        return 2;
    }
    if (!shape.empty()) {
        try {
            const ls::ModelShape& m = ls::find_model_shape(shape);
            const uint64_t bytes = ls::write_shaped_model(out, m, spec.seed, threads);
            std::printf("wrote %s: %s-shaped %s, %d layers, embd %d, %d/%d heads of %d, ff %d, vocab %d, %.1f MiB of "
                        "weights, seed %llu\n",
                        out.c_str(), m.name.c_str(), m.arch.c_str(), m.n_layer, m.n_embd, m.n_head, m.n_head_kv,
                        m.head_dim, m.n_ff, m.n_vocab, double(bytes) / 1048576.0, (unsigned long long)spec.seed);
            if (!mmproj.empty()) {
                const uint64_t pb = ls::write_shaped_mmproj(mmproj, m, spec.seed, threads);
                std::printf("wrote %s: %s-shaped projector, %.1f MiB of weights\n", mmproj.c_str(), m.name.c_str(), double(pb) / 1048576.0);
            }
        } catch (const std::exception& e) {
            std::fprintf(stderr, "lockstep-make-test-model: %s\n", e.what());
            return 1;
        }
        return 0;
    }
    if (!tokens_for.empty()) {
        try {
            ls::test::edit_vocab(tokens_for, out, vedit);
        } catch (const std::exception& e) {
            std::fprintf(stderr, "lockstep-make-test-model: %s\n", e.what());
            return 1;
        }
        std::printf("wrote %s: %s with %zu tokens added or retyped%s\n", out.c_str(), tokens_for.c_str(), vedit.tokens.size(),
                    vedit.chat_template ? " and a chat template" : "");
        return 0;
    }
    if (!requantize.empty()) {
        try {
            const int n = ls::test::requantize_gguf(requantize, out, spec.wtype);
            std::printf("wrote %s: %s with %d matrices requantized to %s\n", out.c_str(), requantize.c_str(), n,
                        ls::dtype_name(spec.wtype));
        } catch (const std::exception& e) {
            std::fprintf(stderr, "lockstep-make-test-model: %s\n", e.what());
            return 1;
        }
        return 0;
    }
    if (!vocab_for.empty()) {
        try {
            ls::write_with_tiny_vocab(vocab_for, out);
        } catch (const std::exception& e) {
            std::fprintf(stderr, "lockstep-make-test-model: %s\n", e.what());
            return 1;
        }
        std::printf("wrote %s: %s with the tiny vocabulary\n", out.c_str(), vocab_for.c_str());
        return 0;
    }
    try {
        ls::write_tiny_gemma3(out, spec);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "lockstep-make-test-model: %s\n", e.what());
        return 1;
    }
    std::printf("wrote %s: gemma3, %d layers, embd %d, %d/%d heads of %d, ff %d, vocab %d, window %d, ctx %d, %s, seed %llu\n",
                out.c_str(), spec.n_layer, spec.n_embd, spec.n_head, spec.n_head_kv, spec.head_dim, spec.n_ff,
                spec.n_vocab, spec.window, spec.ctx, ls::dtype_name(spec.wtype), (unsigned long long)spec.seed);
    return 0;
}
