#include <stdexcept>

#include "backends/cuda/elementwise.cuh"
#include "backends/cuda/support_predicates.h"
#include "core/ir/op_params.h"

namespace ls::cuda {
namespace {

// Rotates with the graph's cos/sin table (ops::rope_table: made on the host by core, since a
// device libm's double cos/sin may differ in the last bit, which could flip a float
// rounding). The rotation itself is two products and one sum or difference, no fused
// operations (-fmad=false).
__global__ void rope_kernel(const uint8_t* x, Shape sx, uint8_t* y, Shape sy, const float* cs, int64_t half, int mode, int n_dims) {
    const int64_t t = blockIdx.y, h = blockIdx.x;
    const float* px = reinterpret_cast<const float*>(x + h * sx.nb[1] + t * sx.nb[2]);
    float* py = reinterpret_cast<float*>(y + h * sy.nb[1] + t * sy.nb[2]);
    for (int64_t i = n_dims + threadIdx.x; i < sx.ne[0]; i += blockDim.x) py[i] = px[i];
    for (int64_t i = threadIdx.x; i < half; i += blockDim.x) {
        const float c = cs[2 * (t * half + i)], s = cs[2 * (t * half + i) + 1];
        const int64_t i0 = mode == ROPE_NEOX ? i : 2 * i;
        const int64_t i1 = mode == ROPE_NEOX ? i + half : 2 * i + 1;
        const float a = px[i0], b = px[i1];
        py[i0] = __fsub_rn(__fmul_rn(a, c), __fmul_rn(b, s));
        py[i1] = __fadd_rn(__fmul_rn(a, s), __fmul_rn(b, c));
    }
}

}  // namespace

void rope(const Tensor& dst, Ctx& ctx) {
    const Tensor& x = *dst.src[0];
    const RopeParams p = dst.get_params<RopeParams>();
    const int64_t half = p.n_dims / 2, T = x.ne[2], H = x.ne[1];
    if (x.nelements() == 0) return;
    if (T > 65535) throw std::runtime_error("cuda rope: more than 65535 tokens in one graph");
    LS_LAUNCH(rope_kernel, dim3(unsigned(H), unsigned(T)), 64, ctx.stream)(dptr(x), shape_of(x), dptr(dst), shape_of(dst),
                                                                      reinterpret_cast<const float*>(dptr(*dst.src[1])), half,
                                                                      p.mode, p.n_dims);
    LS_CUDA_CHECK_LAUNCH("rope_kernel");
}

bool supports_rope(const Tensor& n) {
    return f32_elems(n.src[0]) && n.src[1] && f32_elems(n.src[1]) && n.src[1]->is_contiguous() && f32_elems(&n);
}

}  // namespace ls::cuda
