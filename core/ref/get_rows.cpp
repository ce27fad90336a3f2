#include "core/ref/ref_ops.h"

namespace ls::ref {

void get_rows(const Tensor& dst) {
    const Tensor& src = *dst.src[0];
    const Tensor& idx = *dst.src[1];
    check_row_indices(idx, src.ne[1], "get_rows");
    for (int64_t i = 0; i < idx.ne[0]; ++i)
        row_to_f32(src.type, src.row(index_at(idx, i)), reinterpret_cast<float*>(dst.row(i)), src.ne[0]);
}

}  // namespace ls::ref
