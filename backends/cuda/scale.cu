#include "backends/cuda/elementwise.cuh"
#include "backends/cuda/support_predicates.h"
#include "core/ir/op_params.h"

namespace ls::cuda {
namespace {
struct ScaleF {
    float s;
    __device__ float operator()(float x) const { return x * s; }
};
}  // namespace
void scale(const Tensor& dst, Ctx& ctx) { launch_unary(dst, ctx, ScaleF{dst.get_params<ScaleParams>().s}, "launch of scale"); }
bool supports_scale(const Tensor& n) {
    const Tensor* a = n.src[0];
    return f32_elems(a) && a->is_contiguous() && f32_elems(&n) && n.is_contiguous();
}

}  // namespace ls::cuda
