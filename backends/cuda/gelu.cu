#include "backends/cuda/kernels.cuh"

namespace ls::cuda {
namespace {
// det_gelu of core/rules/detmath.h itself (the reference's definition), compiled for the device.
struct GeluF {
    __device__ float operator()(float x) const { return det_gelu(x); }
};
}  // namespace
void gelu(const Tensor& dst, Ctx& ctx) { launch_unary(dst, ctx, GeluF{}, "launch of gelu"); }
}  // namespace ls::cuda
