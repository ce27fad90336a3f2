#include <stdexcept>
#include <vector>

#include "backends/cuda/elementwise.cuh"
#include "backends/cuda/support_predicates.h"
#include "core/ir/op_params.h"
#include "core/rules/rope_rule.h"

namespace ls::cuda {
namespace {

// Rotates with cos/sin tables made on the host by core/rules/rope_rule.h, as every backend
// makes them: device libm's double cos/sin may differ in the last bit, which could flip a
// float rounding. The rotation itself
// is two products and one sum or difference, no fused operations (-fmad=false).
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
    const auto key = std::make_tuple(dst.src[1], dst.src[2], p.n_dims, p.mode, p.freq_base, p.freq_scale, p.ext_factor, p.attn_factor,
                                     p.corr_lo, p.corr_hi);
    const float* table = nullptr;
    if (auto it = ctx.rope_tables.find(key); it != ctx.rope_tables.end()) {
        table = it->second;
    } else {
        const std::vector<uint8_t> pos_b = ctx.host_bytes(*dst.src[1]);
        const int32_t* pos = reinterpret_cast<const int32_t*>(pos_b.data());
        std::vector<uint8_t> ff_b;
        if (dst.src[2]) ff_b = ctx.host_bytes(*dst.src[2]);
        const float* ff = dst.src[2] ? reinterpret_cast<const float*>(ff_b.data()) : nullptr;
        std::vector<float> cs(size_t(2 * T * half));
        rope_angles(pos, T, p, ff, [&](int64_t t, int64_t i, float c, float s) {
            cs[size_t(2 * (t * half + i))] = c;
            cs[size_t(2 * (t * half + i) + 1)] = s;
        });
        auto* t = static_cast<float*>(ctx.arena(cs.size() * sizeof(float)));
        ctx.upload(t, cs.data(), cs.size() * sizeof(float));
        ctx.rope_tables[key] = t;
        table = t;
    }
    if (T > 65535) throw std::runtime_error("cuda rope: more than 65535 tokens in one graph");
    LS_LAUNCH(rope_kernel, dim3(unsigned(H), unsigned(T)), 64, ctx.stream)(dptr(x), shape_of(x), dptr(dst), shape_of(dst), table, half,
                                                                      p.mode, p.n_dims);
    LS_CUDA_CHECK_LAUNCH("rope_kernel");
}

bool supports_rope(const Tensor& n) {
    const Tensor* a = n.src[0];
    return f32_elems(a) && n.src[1] && n.src[1]->type == DType::I32 && n.src[1]->is_contiguous() &&
           (!n.src[2] || (f32_elems(n.src[2]) && n.src[2]->is_contiguous())) && f32_elems(&n);
}

}  // namespace ls::cuda
