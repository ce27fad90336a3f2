#include <tbb/parallel_for.h>

#include "core/ref/ref_ops.h"
#include "cpu/ops/cpu_ops.h"
#include "cpu/quant_rows.h"

namespace ls::cpu {

void get_rows(const Tensor& dst) {
    const Tensor& src = *dst.src[0];
    const Tensor& idx = *dst.src[1];
    ref::check_row_indices(idx, src.ne[1], "get_rows");
    tbb::parallel_for(int64_t(0), idx.ne[0], [&](int64_t i) {
        dequantize_row_fast(src.type, src.row(ref::index_at(idx, i)), reinterpret_cast<float*>(dst.row(i)), src.ne[0]);
    });
}

}  // namespace ls::cpu
