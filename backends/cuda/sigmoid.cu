#include "backends/cuda/elementwise.cuh"
#include "backends/cuda/support_predicates.h"

namespace ls::cuda {
namespace {
struct SigmoidF {
    __device__ float operator()(float x) const { return det_sigmoid(x); }
};
}  // namespace
void sigmoid(const Tensor& dst, Ctx& ctx) { launch_unary(dst, ctx, SigmoidF{}, "launch of sigmoid"); }
bool supports_sigmoid(const Tensor& n) {
    const Tensor* a = n.src[0];
    return f32_elems(a) && a->is_contiguous() && f32_elems(&n) && n.is_contiguous();
}

}  // namespace ls::cuda
