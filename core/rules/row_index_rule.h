// The index rule of get_rows, set_rows (and the KV cache's row writes): every index lies in
// [0, rows), and the whole index vector is checked before any row is read or written, so a
// bad index changes nothing. One definition, with the message every backend gives:
// "<op>: index R at position I outside [0, rows)" (std::out_of_range).
#pragma once
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>

namespace ls {

// Index i of an I32 (i64 false) or I64 vector whose entries lie `stride` bytes apart.
inline int64_t row_index_at(const uint8_t* base, size_t stride, bool i64, int64_t i) {
    const uint8_t* p = base + size_t(i) * stride;
    if (i64) {
        int64_t v;
        std::memcpy(&v, p, 8);
        return v;
    }
    int32_t v;
    std::memcpy(&v, p, 4);
    return v;
}

inline void check_row_indices(const uint8_t* base, size_t stride, bool i64, int64_t n, int64_t rows, const char* op) {
    for (int64_t i = 0; i < n; ++i) {
        const int64_t r = row_index_at(base, stride, i64, i);
        if (r < 0 || r >= rows)
            throw std::out_of_range(std::string(op) + ": index " + std::to_string(r) + " at position " + std::to_string(i) +
                                    " outside [0, " + std::to_string(rows) + ")");
    }
}

}  // namespace ls
