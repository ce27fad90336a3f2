#include "backends/cuda/elementwise.cuh"
#include "backends/cuda/support_predicates.h"
#include "core/ir/op_params.h"

namespace ls::cuda {
namespace {
// The reference's comparisons and choices (core/ref/clamp.cpp): no fminf/fmaxf, which would
// turn a NaN input into a bound.
struct ClampF {
    float lo, hi;
    __device__ float operator()(float x) const { return x < lo ? lo : (x > hi ? hi : x); }
};
}  // namespace
void clamp(const Tensor& dst, Ctx& ctx) {
    const ClampParams p = dst.get_params<ClampParams>();
    launch_unary(dst, ctx, ClampF{p.min, p.max}, "launch of clamp");
}
bool supports_clamp(const Tensor& n) {
    const Tensor* a = n.src[0];
    return f32_elems(a) && a->is_contiguous() && f32_elems(&n) && n.is_contiguous();
}

}  // namespace ls::cuda
