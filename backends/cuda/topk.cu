// topk (core/ref/topk.cpp): one thread per column, core/rules/topk_rule.h's selection.
#include "backends/cuda/elementwise.cuh"
#include "backends/cuda/support_predicates.h"
#include "core/ir/op_params.h"
#include "core/rules/topk_rule.h"

namespace ls::cuda {
namespace {

__global__ void topk_kernel(const uint8_t* x, int64_t x_nb1, const uint8_t* v, int64_t v_nb1, int32_t E, int64_t T, TopkParams p,
                            uint8_t* dst, int64_t d_nb1) {
    const int64_t t = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
    if (t >= T) return;
    int32_t ids[kTopkMax];
    const float* col = reinterpret_cast<const float*>(x + t * x_nb1);
    topk_select_grouped(col, 1, E, p.k, p.n_group, p.group_used, p.group_top, ids);
    if (p.values) topk_values(reinterpret_cast<const float*>(v + t * v_nb1), 1, ids, p.k, p.norm != 0, reinterpret_cast<float*>(dst + t * d_nb1));
    else
        for (int32_t j = 0; j < p.k; ++j) reinterpret_cast<int32_t*>(dst + t * d_nb1)[j] = ids[j];
}

}  // namespace

void topk(const Tensor& dst, Ctx& ctx) {
    const Tensor& x = *dst.src[0];
    const Tensor& v = dst.src[1] ? *dst.src[1] : x;
    const int64_t T = x.ne[1];
    if (T == 0) return;
    LS_LAUNCH(topk_kernel, blocks_for(T, 128), 128, ctx.stream)(dptr(x), int64_t(x.nb[1]), dptr(v), int64_t(v.nb[1]), int32_t(x.ne[0]), T,
                                                            dst.get_params<TopkParams>(), dptr(dst), int64_t(dst.nb[1]));
    LS_CUDA_CHECK_LAUNCH("topk_kernel");
}

bool supports_topk(const Tensor& n) {
    const Tensor* a = n.src[0];
    const Tensor* v = n.src[1];
    return f32_elems(a) && a->is_contiguous() && (!v || (f32_elems(v) && v->is_contiguous())) && n.is_contiguous();
}

}  // namespace ls::cuda
