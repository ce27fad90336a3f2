// Random-weight GGUF files with the shapes and weight types of real models (a Llama 3.2 1B,
// a Qwen3 8B, Gemma 3 270M and 1B, Qwen3-VL 4B and its projector, each as llama.cpp's
// Q4_K_M lays out its types; the projector in F16 as its converter writes it), for
// speed measurements where the real file cannot travel: the time of a step depends on the
// shapes and types, not on the values. Written by lockstep-make-test-model --shape.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "core/quant/dtype.h"

namespace ls {

struct ModelShape {
    std::string name;  // the --shape name
    std::string arch;  // general.architecture: gemma3, llama, qwen3 or qwen3vl
    int n_layer, n_embd, n_head, n_head_kv, head_dim, n_ff, n_vocab;
    int window;        // gemma3: the windowed layers' window (0 elsewhere)
    int ctx;           // trained context length
    float rope_base;
    bool tied_output;  // no output.weight: the token embedding is the output head
    // qwen3vl: the projector's deepstack layers (its rows n_embd * (1 + n_deepstack) wide).
    int n_deepstack = 0;
};

// The shapes lockstep-make-test-model --shape knows.
const std::vector<ModelShape>& model_shapes();
// The named shape; throws std::invalid_argument listing the known names.
const ModelShape& find_model_shape(const std::string& name);

// llama.cpp's Q4_K_M choice of type for one matrix (its llama_tensor_get_type): Q6_K for the
// output head and for attn_v and ffn_down in the layers where it spends more bits, Q4_K for
// the rest, and where a row is not a multiple of 256 the fallback it takes (Q5_0 for Q4_K,
// Q8_0 for Q6_K). `role` is the tensor name without "blk.N.".
DType q4_k_m_type(const std::string& role, int layer, int n_layer, int64_t row_len, bool tied_output);

// Writes the file: each matrix's rows copies of 64 rows of weights uniform in +-sqrt(3/k)
// (the variance of N(0, 1/k)), quantized by the reference quantizers on `threads` threads
// from per-row seeds, so the same shape and seed give the same bytes for any thread count;
// the tiny vocabulary padded to n_vocab tokens. Returns the bytes of weights written.
uint64_t write_shaped_model(const std::string& path, const ModelShape& shape, uint64_t seed, int threads);

// The projector (mmproj) of a shape that has one, qwen3vl-4b: Qwen3-VL-4B's vision tower (24
// layers of 1024, 16 heads, patch 16, a 48 x 48 position grid), its merger and deepstack
// mergers after layers 5, 11 and 17, into the text model's width; matrices F16 (uniform, the
// variance of N(0, 1/k)), the patch kernels F16, norms, biases and positions F32. Throws for a
// shape without one. Returns the bytes of weights written.
bool has_shaped_mmproj(const ModelShape& shape);
uint64_t write_shaped_mmproj(const std::string& path, const ModelShape& shape, uint64_t seed, int threads);

}  // namespace ls
