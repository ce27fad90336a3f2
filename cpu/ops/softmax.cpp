#include <tbb/parallel_for.h>

#include "core/ir/op_params.h"
#include "core/ref/ref_ops.h"
#include "cpu/ops/cpu_ops.h"

namespace ls::cpu {

void softmax(const Tensor& dst) {
    const Tensor& x = *dst.src[0];
    const float scale = dst.get_params<SoftmaxParams>().scale;
    const int64_t K = x.ne[0];
    // Rows are short (router logits): the reference's row, spread over the threads.
    tbb::parallel_for(int64_t(0), x.nrows(), [&](int64_t r) {
        ref::softmax_row(x.data_as<const float>() + r * K, dst.data_as<float>() + r * K, K, scale);
    });
}

}  // namespace ls::cpu
