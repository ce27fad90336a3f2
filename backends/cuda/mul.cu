#include "backends/cuda/kernels.cuh"

namespace ls::cuda {
namespace {
struct MulF {
    __device__ float operator()(float a, float b) const { return a * b; }
};
}  // namespace
void mul(const Tensor& dst, Ctx& ctx) { launch_binary(dst, ctx, MulF{}, "launch of mul"); }
}  // namespace ls::cuda
