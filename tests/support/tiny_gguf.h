// Tiny Gemma 3 GGUF files with random weights, for tests and the lockstep-make-test-model
// tool. The file has every metadata key Gemma::load_arch reads and a small SentencePiece
// vocabulary that Tokenizer::from_gguf accepts, so it runs through the whole engine.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "core/quant/dtype.h"

namespace ls {

struct TinyGemma3Spec {
    int n_layer = 3;     // Gemma 3 makes layer il windowed when il % 6 < 5: use >= 6 for a global one
    int n_embd = 64;
    int n_head = 2;
    int n_head_kv = 1;
    int head_dim = 32;   // key and value head size
    int n_ff = 128;
    int n_vocab = 300;   // at least 262: 6 special tokens and 256 byte tokens
    int window = 8;      // sliding window of the windowed layers
    int ctx = 256;       // gemma3.context_length
    DType wtype = DType::Q8_0;  // type of the matmul weights (norm weights are F32)
    uint64_t seed = 1;
    float rms_eps = 1e-6f;
    float rope_base = 1e6f;     // global layers (windowed layers use 10000, as Gemma 3 does)
    int pooling = -1;           // >= 0: gemma3.pooling_type (embeddings; llama.cpp's numbers), else no key
};

// Throws std::invalid_argument naming the field when the spec cannot make a valid model
// (e.g. a matmul row length that is not a multiple of wtype's block size).
void check_tiny_gemma3(const TinyGemma3Spec& spec);
// The GGUF image. Deterministic: the same spec gives the same bytes on every platform.
std::vector<uint8_t> make_tiny_gemma3(const TinyGemma3Spec& spec);
void write_tiny_gemma3(const std::string& path, const TinyGemma3Spec& spec);

// Copies the GGUF at `in` (metadata and tensors) to `out` with the tiny vocabulary below in
// place of any tokenizer, sized to its token_embd rows: a tokenizer for the tiny test models
// that have none (the hybrids), so text endpoints can drive them. Throws naming the problem.
void write_with_tiny_vocab(const std::string& in, const std::string& out);

class GgufWriter;
// The keys of general.* and <arch>.* that a decoder-only model's loader reads (context,
// widths, depth, heads, head sizes), shared by the tiny and the shaped writers.
struct DecoderKeys {
    std::string arch, name;
    int ctx, n_embd, n_layer, n_ff, n_head, n_head_kv, head_dim;
};
void put_arch_keys(GgufWriter& w, const DecoderKeys& k);
// The tiny vocabulary's tokenizer keys, padded with unused pieces to n_vocab tokens (at
// least 262): the byte tokens make every text encodable. `control`: more control tokens, in
// the first unused slots (a family's markers: Qwen-VL's image tokens).
void put_tiny_vocab(GgufWriter& w, int n_vocab, const std::vector<std::string>& control = {});

// Token ids of the tiny vocabulary.
namespace tiny_vocab {
constexpr int32_t kPad = 0, kEos = 1, kBos = 2, kUnk = 3, kStartOfTurn = 4, kEndOfTurn = 5;
constexpr int32_t kFirstByte = 6;    // <0x00> .. <0xFF> follow
constexpr int32_t kFirstPiece = 262; // word pieces follow
}  // namespace tiny_vocab

}  // namespace ls
