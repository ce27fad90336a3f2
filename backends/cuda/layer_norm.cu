#include "backends/cuda/block_reduce.cuh"
#include "backends/cuda/elementwise.cuh"
#include "backends/cuda/support_predicates.h"
#include "core/ir/op_params.h"

namespace ls::cuda {
namespace {

// A warp per row (kRowWarps rows per block), in core/ref/layer_norm.cpp's order: the mean from
// the canonical sum, the centred row written to y, its canonical sum of squares, then
// ((d * r) * w) + b with IEEE division and square root.
constexpr int kRowWarps = 4;

__global__ void __launch_bounds__(32 * kRowWarps)
layer_norm_kernel(const uint8_t* x, Shape sx, const float* w, const float* b, uint8_t* y, Shape sy, float eps, int64_t n_rows) {
    const int64_t r = int64_t(blockIdx.x) * kRowWarps + threadIdx.y, K = sx.ne[0];
    if (r >= n_rows) return;  // the whole warp
    const int lane = threadIdx.x;
    const float* px = reinterpret_cast<const float*>(x + row_offset(sx, r));
    float* py = reinterpret_cast<float*>(y + row_offset(sy, r));
    const float mean = canon_div(warp_canon_sum(K, lane, [&](int64_t i) { return px[i]; }), float(K));
    // Each lane centres the elements it sums next (i = lane mod 32): no other lane reads them.
    for (int64_t i = lane; i < K; i += 32) py[i] = __fsub_rn(px[i], mean);
    const float ss = warp_canon_dot(py, py, K, lane);
    const float rs = canon_div(1.0f, canon_sqrt(__fadd_rn(canon_div(ss, float(K)), eps)));
    for (int64_t i = lane; i < K; i += 32) {
        float v = __fmul_rn(py[i], rs);
        if (w) v = __fmul_rn(v, w[i]);
        if (b) v = __fadd_rn(v, b[i]);
        py[i] = v;
    }
}

}  // namespace

void layer_norm(const Tensor& dst, Ctx& ctx) {
    const Tensor& x = *dst.src[0];
    if (x.nelements() == 0) return;
    const float* w = dst.src[1] ? reinterpret_cast<const float*>(dptr(*dst.src[1])) : nullptr;
    const float* b = dst.src[2] ? reinterpret_cast<const float*>(dptr(*dst.src[2])) : nullptr;
    const int64_t n_rows = x.nrows();
    LS_LAUNCH(layer_norm_kernel, blocks_for(n_rows, kRowWarps), dim3(32, kRowWarps), ctx.stream)(
        dptr(x), shape_of(x), w, b, dptr(dst), shape_of(dst), dst.get_params<LayerNormParams>().eps, n_rows);
    LS_CUDA_CHECK_LAUNCH("layer_norm_kernel");
}

bool supports_layer_norm(const Tensor& n) {
    const Tensor *a = n.src[0], *w = n.src[1], *b = n.src[2];
    return f32_elems(a) && (!w || (f32_elems(w) && w->is_contiguous())) && (!b || (f32_elems(b) && b->is_contiguous())) &&
           f32_elems(&n);
}

}  // namespace ls::cuda
