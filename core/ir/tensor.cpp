#include "core/ir/tensor.h"

namespace ls {

const char* op_name(OpId op) {
    static const char* const names[] = {
#define LS_X(E, n, P) #n,
        LS_OP_LIST(LS_X)
#undef LS_X
    };
    if (op == OpId::NONE) return "none";
    return names[static_cast<int>(op)];
}

void set_contiguous_strides(Tensor& t) {
    const DTypeTraits& tr = traits(t.type);
    t.nb[0] = tr.block_bytes;  // per block for quantized types; rows are what kernels step over
    t.nb[1] = row_bytes(t.type, t.ne[0]);
    for (int i = 2; i < kMaxDims; ++i) t.nb[i] = t.nb[i - 1] * t.ne[i - 1];
}

size_t Tensor::nbytes() const {
    if (nelements() == 0) return 0;
    size_t n = row_bytes(type, ne[0]);
    for (int i = 1; i < kMaxDims; ++i) n += (ne[i] - 1) * nb[i];
    return n;
}

bool Tensor::is_contiguous() const {
    if (nb[1] != row_bytes(type, ne[0])) return false;
    for (int i = 2; i < kMaxDims; ++i)
        if (nb[i] != nb[i - 1] * ne[i - 1]) return false;
    return true;
}

std::string shape_str(const Tensor& t) {
    std::string s = "[";
    for (int i = 0; i < kMaxDims; ++i) s += std::to_string(t.ne[i]) + (i + 1 < kMaxDims ? ", " : "]");
    return s + " " + dtype_name(t.type);
}

}  // namespace ls
