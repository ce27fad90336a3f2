// Element types of tensors, numbered as in GGUF so a file's type id is the enum value.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

namespace ls {

enum class DType : uint32_t {
    F32 = 0, F16 = 1, Q4_0 = 2, Q4_1 = 3, Q5_0 = 6, Q5_1 = 7, Q8_0 = 8, Q8_1 = 9,
    Q2_K = 10, Q3_K = 11, Q4_K = 12, Q5_K = 13, Q6_K = 14, Q8_K = 15,
    I8 = 24, I16 = 25, I32 = 26, I64 = 27, F64 = 28, BF16 = 30,
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
// Parses "f32", "q8_0", ... (case-insensitive). Throws with the list of valid names.
DType dtype_from_name(const std::string& s);

}  // namespace ls
