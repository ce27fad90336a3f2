#include "backends/vulkan/ops/mul_mat_act.h"
#include "backends/vulkan/ops/type_support.h"
#include "backends/vulkan/ops/vk_ops.h"

namespace ls::vk {

bool supports_mul_mat(const Tensor& n) {
    const Tensor* w = n.src[0];
    return weight_type(w->type) && n.src[1]->nb[0] == 4 && w->ne[1] <= 65535 * 64;
}

void plan_mul_mat(const Tensor& n, Plan& plan) { plan_act(n, plan); }

void record_mul_mat(const Tensor& n, Recorder& r) {
    const Tensor *a = n.src[0], *b = n.src[1];
    const DType at = vec_dot_type(a->type);
    const uint32_t K = uint32_t(a->ne[0]), rows = uint32_t(b->nrows());
    const uint32_t act_nb1 = uint32_t(act_row_bytes(at, K));
    if (r.act_x != b || r.act_t != at) {
        record_act(b, at, K, act_nb1, r);
        r.act_x = b;
        r.act_t = at;
    }
    const uint32_t N = uint32_t(a->ne[1]);
    PcMulMat pm{r.addr(a), r.act.lo, r.addr(&n), K, N, rows, uint32_t(a->nb[1]), act_nb1, 0};
    // The shared-memory variant where a workgroup has a full tile of 8 activation
    // rows to share (on lavapipe it pays off in prompt batches and loses at 1 row).
    const bool sh = r.ctx.use_shared && block_size(a->type) == 32 && rows >= 8;
    // The subgroup variant for decode steps: one subgroup per weight row, R rows
    // per workgroup as the shader computes it from the reported subgroup size.
    const DType wt = a->type;
    // (sg_kernel: a lane a 32-element block, or lanes sharing a 256-element super-block.)
    if (const char* sg = sg_kernel(wt); sg && r.ctx.use_subgroup_dot && rows <= 4) {
        if (sgk_type(wt)) pm.lanes = r.ctx.sgk_lanes;
        const uint64_t R = r.ctx.sg_rows(), groups = (uint64_t(N) + R - 1) / R;
        const uint32_t gx = uint32_t(std::min<uint64_t>(groups, 65535)), gy = uint32_t((groups + gx - 1) / gx);
        r.dispatch(std::string("mul_mat_") + sg + lower_name(wt), pm, gx, gy, {r.range(a), act_range(r, act_nb1, rows)}, {r.range(&n)});
        return;
    }
    r.dispatch((sh ? "mul_mat_sh_" : "mul_mat_") + lower_name(a->type), pm, (N + 63) / 64, (rows + 7) / 8,
               {r.range(a), act_range(r, act_nb1, rows)}, {r.range(&n)});
}

}  // namespace ls::vk
