// The SPIR-V of every shader variant, compiled from shaders/*.comp at build time and
// embedded by cmake/embed_spirv.cmake.
#pragma once
#include <cstddef>
#include <cstdint>

namespace ls::vk {

struct ShaderBlob {
    const char* name;  // variant name, e.g. "mul_mat_q4_k"
    const uint32_t* words;
    size_t n_words;
};
extern const ShaderBlob kShaderBlobs[];
extern const size_t kShaderBlobCount;

}  // namespace ls::vk
