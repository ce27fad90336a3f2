#include "backends/cuda/elementwise.cuh"
#include "backends/cuda/unary_mul_quant.cuh"
#include "backends/cuda/support_predicates.h"

namespace ls::cuda {
namespace {
// det_gelu of core/rules/canon.h itself (the reference's definition), compiled for the device.
struct GeluF {
    __device__ float operator()(float x) const { return det_gelu(x); }
};
}  // namespace
void gelu(const Tensor& dst, Ctx& ctx) { launch_unary(dst, ctx, GeluF{}, "launch of gelu"); }
bool gelu_mul(const Tensor& act, const Tensor& mul, Ctx& ctx) { return launch_unary_mul(act, mul, ctx, GeluF{}); }
bool gelu_mul_mat(const Tensor& act, const Tensor& mul, Tensor* const* mms, int n, Ctx& ctx) {
    return launch_unary_mul_mat(act, mul, mms, n, ctx, GeluF{});
}
bool supports_gelu(const Tensor& n) {
    const Tensor* a = n.src[0];
    return f32_elems(a) && a->is_contiguous() && f32_elems(&n) && n.is_contiguous();
}

}  // namespace ls::cuda
