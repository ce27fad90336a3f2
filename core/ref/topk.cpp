#include "core/ir/op_params.h"
#include "core/ref/ref_ops.h"
#include "core/rules/topk_rule.h"

namespace ls::ref {

// Per column of x [E, T]: the k first entries of topk_rule.h's order (within the kept groups);
// their indices, or their (renormalised) values, or those of src[1] at them.
void topk(const Tensor& dst) {
    const Tensor& x = *dst.src[0];
    const Tensor& v = dst.src[1] ? *dst.src[1] : x;
    const TopkParams p = dst.get_params<TopkParams>();
    int32_t ids[kTopkMax];
    for (int64_t t = 0; t < x.ne[1]; ++t) {
        const float* col = reinterpret_cast<const float*>(x.row(t));
        topk_select_grouped(col, 1, int32_t(x.ne[0]), p.k, p.n_group, p.group_used, p.group_top, ids);
        if (p.values)
            topk_values(reinterpret_cast<const float*>(v.row(t)), 1, ids, p.k, p.norm != 0, reinterpret_cast<float*>(dst.row(t)));
        else
            for (int32_t j = 0; j < p.k; ++j) reinterpret_cast<int32_t*>(dst.row(t))[j] = ids[j];
    }
}

}  // namespace ls::ref
