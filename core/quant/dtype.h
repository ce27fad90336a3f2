// Element types of tensors, numbered as in GGUF so a file's type id is the enum value.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

#include "core/quant/dtype_ids.h"

namespace ls {

// The ids come from core/quant/dtype_ids.h, which CUDA and GLSL read too.
enum class DType : uint32_t {
    F32 = LS_TYPE_F32, F16 = LS_TYPE_F16, Q4_0 = LS_TYPE_Q4_0, Q4_1 = LS_TYPE_Q4_1, Q5_0 = LS_TYPE_Q5_0,
    Q5_1 = LS_TYPE_Q5_1, Q8_0 = LS_TYPE_Q8_0, Q8_1 = LS_TYPE_Q8_1, Q2_K = LS_TYPE_Q2_K, Q3_K = LS_TYPE_Q3_K,
    Q4_K = LS_TYPE_Q4_K, Q5_K = LS_TYPE_Q5_K, Q6_K = LS_TYPE_Q6_K, Q8_K = LS_TYPE_Q8_K, I8 = LS_TYPE_I8,
    I16 = LS_TYPE_I16, I32 = LS_TYPE_I32, I64 = LS_TYPE_I64, F64 = LS_TYPE_F64, BF16 = LS_TYPE_BF16,
    IQ4_NL = LS_TYPE_IQ4_NL, IQ4_XS = LS_TYPE_IQ4_XS, TQ1_0 = LS_TYPE_TQ1_0, TQ2_0 = LS_TYPE_TQ2_0, MXFP4 = LS_TYPE_MXFP4,
    IQ2_XXS = LS_TYPE_IQ2_XXS, IQ2_XS = LS_TYPE_IQ2_XS, IQ2_S = LS_TYPE_IQ2_S, IQ3_XXS = LS_TYPE_IQ3_XXS, IQ3_S = LS_TYPE_IQ3_S,
    IQ1_S = LS_TYPE_IQ1_S, IQ1_M = LS_TYPE_IQ1_M,
};

struct DTypeTraits {
    const char* name;
    int64_t block;        // elements per block (1 for plain types)
    size_t block_bytes;   // bytes per block
    bool quantized;
};

// Traits of a GGUF type id, or nullptr if the id is not one lockstep knows.
const DTypeTraits* dtype_traits_or_null(uint32_t ggml_id);
const DTypeTraits& traits(DType t);
inline const char* dtype_name(DType t) { return traits(t).name; }
inline int64_t block_size(DType t) { return traits(t).block; }
// Bytes of a row of n elements; throws if n is not a multiple of the block size.
size_t row_bytes(DType t, int64_t n);
// The name of a GGUF type id that llama.cpp writes but lockstep cannot run yet ("iq4_nl",
// "tq1_0", "mxfp4", ...), for refusals that name the type; nullptr for any other id.
const char* gguf_type_name_not_run(uint32_t ggml_id);
// The types lockstep runs, comma-separated ("f32, f16, q4_0, ...").
std::string dtype_names();
// Parses "f32", "q8_0", ... (case-insensitive). Throws with the list of valid names.
DType dtype_from_name(const std::string& s);

}  // namespace ls
