#include "backends/cuda/elementwise.cuh"
#include "backends/cuda/support_predicates.h"

namespace ls::cuda {
namespace {
struct AddF {
    __device__ float operator()(float a, float b) const { return a + b; }
};
}  // namespace
void add(const Tensor& dst, Ctx& ctx) { launch_binary(dst, ctx, AddF{}, "launch of add"); }
bool supports_add(const Tensor& n) {
    const Tensor* a = n.src[0];
    const Tensor* b = n.src[1];
    return f32_elems(a) && f32_elems(b) && f32_elems(&n);
}

}  // namespace ls::cuda
