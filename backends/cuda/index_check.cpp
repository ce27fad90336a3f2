#include "backends/cuda/index_check.h"

#include <cstring>
#include <stdexcept>
#include <string>

namespace ls::cuda {

int64_t host_index(const Tensor& idx, const std::vector<uint8_t>& bytes, int64_t i) {
    const uint8_t* p = bytes.data() + i * int64_t(idx.nb[0]);
    if (idx.type == DType::I64) {
        int64_t v;
        std::memcpy(&v, p, 8);
        return v;
    }
    int32_t v;
    std::memcpy(&v, p, 4);
    return v;
}

void check_indices(const Tensor& idx, const std::vector<uint8_t>& bytes, int64_t rows, const char* op) {
    if (idx.ne[0] > 0 && bytes.size() < size_t((idx.ne[0] - 1) * int64_t(idx.nb[0])) + (idx.type == DType::I64 ? 8 : 4))
        throw std::logic_error(std::string(op) + ": index tensor bytes missing");
    for (int64_t i = 0; i < idx.ne[0]; ++i) {
        const int64_t r = host_index(idx, bytes, i);
        if (r < 0 || r >= rows)
            throw std::out_of_range(std::string(op) + ": index " + std::to_string(r) + " at position " + std::to_string(i) +
                                    " outside [0, " + std::to_string(rows) + ")");
    }
}

}  // namespace ls::cuda
