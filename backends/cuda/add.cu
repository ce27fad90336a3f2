#include "backends/cuda/kernels.cuh"

namespace ls::cuda {
namespace {
struct AddF {
    __device__ float operator()(float a, float b) const { return a + b; }
};
}  // namespace
void add(const Tensor& dst, Ctx& ctx) { launch_binary(dst, ctx, AddF{}, "launch of add"); }
}  // namespace ls::cuda
