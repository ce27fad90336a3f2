#include "backends/cuda/elementwise.cuh"
#include "backends/cuda/support_predicates.h"
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
bool supports_softcap(const Tensor& n) {
    const Tensor* a = n.src[0];
    return f32_elems(a) && a->is_contiguous() && f32_elems(&n) && n.is_contiguous();
}

}  // namespace ls::cuda
