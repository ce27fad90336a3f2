#include "backends/cuda/elementwise.cuh"
#include "backends/cuda/support_predicates.h"

namespace ls::cuda {
namespace {
// det_gelu_erf of core/rules/canon.h itself, compiled for the device.
struct GeluErfF {
    __device__ float operator()(float x) const { return det_gelu_erf(x); }
};
}  // namespace
void gelu_erf(const Tensor& dst, Ctx& ctx) { launch_unary(dst, ctx, GeluErfF{}, "launch of gelu_erf"); }
bool supports_gelu_erf(const Tensor& n) {
    const Tensor* a = n.src[0];
    return f32_elems(a) && a->is_contiguous() && f32_elems(&n) && n.is_contiguous();
}

}  // namespace ls::cuda
