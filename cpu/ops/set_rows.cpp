#include "core/quant.h"
#include "core/ref/ref_ops.h"
#include "cpu/ops/cpu_ops.h"

namespace ls::cpu {

// Sequential on purpose: a ubatch writes few rows, and in order the last duplicate wins.
// Uses the reference quantizers so that cache contents are bit-identical to the reference.
void set_rows(const Tensor& dst) {
    const Tensor& src = *dst.src[0];
    const Tensor& idx = *dst.src[1];
    ref::check_row_indices(idx, dst.ne[1], "set_rows");
    for (int64_t i = 0; i < idx.ne[0]; ++i)
        quantize_row(dst.type, reinterpret_cast<const float*>(src.row(i)), dst.row(ref::index_at(idx, i)), dst.ne[0]);
}

}  // namespace ls::cpu
