#include "backends/cuda/elementwise.cuh"
#include "backends/cuda/unary_mul_quant.cuh"
#include "backends/cuda/support_predicates.h"

namespace ls::cuda {
namespace {
struct SiluF {
    __device__ float operator()(float x) const { return det_silu(x); }
};
}  // namespace
void silu(const Tensor& dst, Ctx& ctx) { launch_unary(dst, ctx, SiluF{}, "launch of silu"); }
bool silu_mul(const Tensor& act, const Tensor& mul, Ctx& ctx) { return launch_unary_mul(act, mul, ctx, SiluF{}); }
bool silu_mul_mat(const Tensor& act, const Tensor& mul, Tensor* const* mms, int n, Ctx& ctx) {
    return launch_unary_mul_mat(act, mul, mms, n, ctx, SiluF{});
}
bool supports_silu(const Tensor& n) {
    const Tensor* a = n.src[0];
    return f32_elems(a) && a->is_contiguous() && f32_elems(&n) && n.is_contiguous();
}

}  // namespace ls::cuda
