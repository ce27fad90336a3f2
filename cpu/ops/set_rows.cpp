#include "core/quant/quant.h"
#include "core/ref/ref_ops.h"
#include "cpu/ops/cpu_ops.h"
#include "cpu/quant_rows.h"

namespace ls::cpu {

// Sequential on purpose: a ubatch writes few rows, and in order the last duplicate wins.
// F16 and Q8_0 rows use the fast quantizers, which tests/ops/test_quant.cpp holds byte-identical
// to the reference ones; the other types use the reference quantizers themselves.
void set_rows(const Tensor& dst) {
    const Tensor& src = *dst.src[0];
    const Tensor& idx = *dst.src[1];
    ref::check_row_indices(idx, dst.ne[1], "set_rows");
    const bool fast = dst.type == DType::F16 || dst.type == DType::Q8_0;
    for (int64_t i = 0; i < idx.ne[0]; ++i) {
        const float* x = reinterpret_cast<const float*>(src.row(i));
        uint8_t* y = dst.row(ref::index_at(idx, i));
        if (fast) quantize_row_act(dst.type, x, y, dst.ne[0]);
        else quantize_row(dst.type, x, y, dst.ne[0]);
    }
}

}  // namespace ls::cpu
