#include "backends/vulkan/ops/mul_mat_act.h"
#include "backends/vulkan/ops/type_support.h"
#include "backends/vulkan/ops/vk_ops.h"

namespace ls::vk {

bool supports_mul_mat_id(const Tensor& n) {
    const Tensor *w = n.src[0], *ids = n.src[2];
    return weight_type(w->type) && n.src[1]->nb[0] == 4 && ids->type == DType::I32 && ids->is_contiguous() && n.is_contiguous() &&
           w->ne[1] <= 65535 * 64 && w->nb[2] <= 0xFFFFFFFFu && ids->nelements() <= 65535;
}

void plan_mul_mat_id(const Tensor& n, Plan& plan) { plan_act(n, plan); }

// Stage 1 as mul_mat's (x [K, X, T]: X * T rows), then one pair per invocation row.
void record_mul_mat_id(const Tensor& n, Recorder& r) {
    const Tensor *a = n.src[0], *b = n.src[1], *ids = n.src[2];
    const DType at = vec_dot_type(a->type);
    const uint32_t K = uint32_t(a->ne[0]), rows = uint32_t(b->nrows());
    const uint32_t act_nb1 = uint32_t(act_row_bytes(at, K));
    record_act(b, at, K, act_nb1, r);
    r.act_x = nullptr;  // the activation rows are this node's now
    const uint32_t N = uint32_t(a->ne[1]), pairs = uint32_t(ids->nelements());
    PcMulMatId pm{r.addr(a), r.act.lo, r.addr(&n), K, N, pairs, uint32_t(a->nb[1]), act_nb1, 0, r.addr(ids),
                  uint32_t(a->nb[2]), uint32_t(a->ne[2]), uint32_t(ids->ne[0]), uint32_t(b->ne[1])};
    // Decode steps (up to 4 tokens): the subgroup kernels of mul_mat, a (token, expert) pair
    // per workgroup row, R weight rows per workgroup (mul_mat_sg_rows.glsl).
    const DType wt = a->type;
    const uint64_t R = r.ctx.sg_rows(), row_groups = (uint64_t(N) + R - 1) / R;
    if (const char* sg = sg_kernel(wt); sg && r.ctx.use_subgroup_dot && ids->ne[1] <= 4 && row_groups <= 65535 && pairs >= 1) {
        if (sgk_type(wt)) pm.lanes = r.ctx.sgk_lanes;
        r.dispatch(std::string("mul_mat_id_") + sg + lower_name(wt), pm, uint32_t(row_groups), pairs,
                   {r.range(a), r.range(ids), act_range(r, act_nb1, rows)}, {r.range(&n)});
        return;
    }
    r.dispatch("mul_mat_id_" + lower_name(a->type), pm, (N + 63) / 64, std::max(pairs, 1u),
               {r.range(a), r.range(ids), act_range(r, act_nb1, rows)}, {r.range(&n)});
}

}  // namespace ls::vk
