#include "core/ref/ref_ops.h"

namespace ls::ref {

// In order, so that with duplicate indices the last row written wins.
void set_rows(const Tensor& dst) {
    const Tensor& src = *dst.src[0];
    const Tensor& idx = *dst.src[1];
    check_row_indices(idx, dst.ne[1], "set_rows");  // before any write
    for (int64_t i = 0; i < idx.ne[0]; ++i)
        row_from_f32(dst.type, reinterpret_cast<const float*>(src.row(i)), dst.row(index_at(idx, i)), dst.ne[0]);
}

}  // namespace ls::ref
