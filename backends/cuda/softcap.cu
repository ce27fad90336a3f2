#include "backends/cuda/kernels.cuh"
#include "core/ir/op_params.h"

namespace ls::cuda {
namespace {
struct SoftcapF {
    float c;
    __device__ float operator()(float x) const { return __fmul_rn(c, det_tanh(__fdiv_rn(x, c))); }
};
}  // namespace
void softcap(const Tensor& dst, Ctx& ctx) {
    launch_unary(dst, ctx, SoftcapF{dst.get_params<SoftcapParams>().cap}, "launch of softcap");
}
}  // namespace ls::cuda
