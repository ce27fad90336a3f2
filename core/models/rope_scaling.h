// The rope settings a GGUF's `<arch>.rope.*` keys describe, as the op's RopeParams: linear
// scaling, YaRN (factor, original context, beta_fast/slow, magnitude), or none. Llama 3's
// scaling needs no keys here: the converter writes its per-pair divisors as rope_freqs.weight.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "core/ir/op_params.h"
#include "core/models/arch_keys.h"

namespace ls {

struct RopeScalingOptions {
    // YaRN's correction range rounded outward to whole pairs (llama.cpp always; transformers
    // unless the config says `truncate: false`, as gpt-oss's does).
    bool yarn_truncate = true;
};

// keys: the file's under its architecture; n_dims the rotated dims per head; freq_base the layer's base.
RopeParams rope_params_from_gguf(const ArchKeys& keys, int32_t n_dims, int32_t mode, float freq_base,
                                 const RopeScalingOptions& opt = {});

// Interleaved M-RoPE (Qwen3-VL, Qwen3.5): the axis of each of the n_rot / 2 rotated pairs
// (mrope_interleaved_axes) from `<arch>.rope.dimension_sections` (time, height, width, ...),
// whose sections must add up to n_rot / 2. Empty where the file has no such key.
std::vector<int32_t> mrope_axes_from_gguf(const GgufFile& f, const std::string& arch, int64_t n_rot);

}  // namespace ls
