#include "backends/cuda/kernels.cuh"

namespace ls::cuda {
namespace {
struct SiluF {
    __device__ float operator()(float x) const { return det_silu(x); }
};
}  // namespace
void silu(const Tensor& dst, Ctx& ctx) { launch_unary(dst, ctx, SiluF{}, "launch of silu"); }
}  // namespace ls::cuda
