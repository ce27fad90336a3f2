#include <tbb/parallel_for.h>

#include "core/ir/op_params.h"
#include "core/rules/topk_rule.h"
#include "cpu/ops/cpu_ops.h"

namespace ls::cpu {

// topk_rule.h's selection per column, columns in parallel.
void topk(const Tensor& dst) {
    const Tensor& x = *dst.src[0];
    const Tensor& v = dst.src[1] ? *dst.src[1] : x;
    const TopkParams p = dst.get_params<TopkParams>();
    tbb::parallel_for(int64_t(0), x.ne[1], [&](int64_t t) {
        int32_t ids[kTopkMax];
        const float* col = reinterpret_cast<const float*>(x.row(t));
        topk_select_grouped(col, 1, int32_t(x.ne[0]), p.k, p.n_group, p.group_used, p.group_top, ids);
        if (p.values)
            topk_values(reinterpret_cast<const float*>(v.row(t)), 1, ids, p.k, p.norm != 0, reinterpret_cast<float*>(dst.row(t)));
        else
            for (int32_t j = 0; j < p.k; ++j) reinterpret_cast<int32_t*>(dst.row(t))[j] = ids[j];
    });
}

}  // namespace ls::cpu
