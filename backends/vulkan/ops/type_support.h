// What the shaders can read and write, for the supports_<op> functions.
#pragma once
#include <cctype>
#include <string>

#include "core/ir/index_inputs.h"
#include "core/ir/tensor.h"

namespace ls::vk {

// The grid i-quants: each shader that reads them is built per type (get_rows_iq2_xxs,
// mul_mat_iq2_xxs), because it first copies that type's codebook into shared memory
// (shaders/iq_grid.glsl); common.glsl's dequant_elem does not read them.
inline bool grid_type(DType t) {
    switch (t) {
        case DType::IQ2_XXS: case DType::IQ2_XS: case DType::IQ2_S: case DType::IQ3_XXS: case DType::IQ3_S:
        case DType::IQ1_S: case DType::IQ1_M:
            return true;
        default:
            return false;
    }
}
// Element types get_rows dequantizes: those of common.glsl's dequant_elem and the grid types.
inline bool dequant_type(DType t) {
    switch (t) {
        case DType::F32: case DType::F16: case DType::BF16: case DType::Q4_0: case DType::Q4_1: case DType::Q5_0:
        case DType::Q5_1: case DType::Q8_0: case DType::Q2_K: case DType::Q3_K: case DType::Q4_K: case DType::Q5_K:
        case DType::Q6_K: case DType::Q8_K: case DType::IQ4_NL: case DType::IQ4_XS: case DType::MXFP4:
        case DType::TQ1_0: case DType::TQ2_0:
            return true;
        default:
            return grid_type(t);
    }
}
// Weight types mul_mat has a dot variant for.
inline bool weight_type(DType t) { return dequant_type(t) && t != DType::Q8_K; }
// Weight types of the subgroup decode kernels (mul_mat_sg.comp: a lane a 32-element block;
// mul_mat_sgk.comp: lanes sharing a 256-element super-block), mul_mat's and mul_mat_id's.
inline bool sg_type(DType t) {
    return t == DType::Q4_0 || t == DType::Q4_1 || t == DType::Q5_0 || t == DType::Q5_1 || t == DType::Q8_0 ||
           t == DType::IQ4_NL || t == DType::MXFP4;
}
inline bool sgk_type(DType t) {
    return t == DType::Q2_K || t == DType::Q3_K || t == DType::Q4_K || t == DType::Q5_K || t == DType::Q6_K ||
           t == DType::IQ4_XS;
}
// The subgroup kernel's name part for weight type t ("sg_", "sgk_"), or null where none reads it.
inline const char* sg_kernel(DType t) { return sg_type(t) ? "sg_" : sgk_type(t) ? "sgk_" : nullptr; }
// KV cache types set_rows writes and attention reads.
inline bool cache_type(DType t) {
    return t == DType::F32 || t == DType::F16 || t == DType::BF16 || t == DType::Q8_0 || t == DType::Q4_0;
}
// "q4_k" for Q4_K: the suffix of the shader variant names (mul_mat_q4_k, attention_f16).
inline std::string lower_name(DType t) {
    std::string s = dtype_name(t);
    for (char& c : s) c = char(std::tolower(static_cast<unsigned char>(c)));
    return s;
}

}  // namespace ls::vk
