#include "backends/cuda/index_check.h"

#include <stdexcept>
#include <string>

#include "core/rules/row_index_rule.h"

namespace ls::cuda {

int64_t host_index(const Tensor& idx, const std::vector<uint8_t>& bytes, int64_t i) {
    return row_index_at(bytes.data(), idx.nb[0], idx.type == DType::I64, i);
}

void check_indices(const Tensor& idx, const std::vector<uint8_t>& bytes, int64_t rows, const char* op) {
    // The bytes come from host_bytes, not from the tensor itself: a short copy is a bug of
    // this backend, not a bad index, and must not be read past.
    if (idx.ne[0] > 0 && bytes.size() < size_t((idx.ne[0] - 1) * int64_t(idx.nb[0])) + (idx.type == DType::I64 ? 8 : 4))
        throw std::logic_error(std::string(op) + ": index tensor bytes missing");
    check_row_indices(bytes.data(), idx.nb[0], idx.type == DType::I64, idx.ne[0], rows, op);
}

}  // namespace ls::cuda
