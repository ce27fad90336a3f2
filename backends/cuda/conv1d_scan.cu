// conv1d_scan: one thread per (run, channel), the reference arithmetic (core/ref/conv1d_scan.cpp):
// a window of the last K inputs slides over the run's tokens; the slot's state is read at the
// start (zeros on reset) and written back at the end, in place.
#include "backends/cuda/elementwise.cuh"
#include "backends/cuda/support_predicates.h"
#include "core/ir/op_params.h"

namespace ls::cuda {
namespace {

constexpr int kMaxK = 16;

__global__ void conv1d_scan_kernel(const uint8_t* x, int64_t x_nb1, const float* w, float* state, int64_t st_nb1,
                                   const int32_t* runs, const int32_t* order, uint8_t* y, int64_t y_nb1, int64_t C, int K,
                                   int64_t n_runs) {
    const int64_t id = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
    if (id >= n_runs * C) return;
    const int64_t ri = id / C, c = id % C;
    const int32_t slot = runs[4 * ri], first = runs[4 * ri + 1], n = runs[4 * ri + 2], reset = runs[4 * ri + 3];
    float* st = reinterpret_cast<float*>(reinterpret_cast<uint8_t*>(state) + slot * st_nb1);
    float win[kMaxK];
    for (int k = 0; k < K - 1; ++k) win[k] = reset ? 0.0f : st[k * C + c];
    const float* wc = w + c * K;
    for (int32_t t = 0; t < n; ++t) {
        const int64_t tok = order[first + t];
        win[K - 1] = reinterpret_cast<const float*>(x + tok * x_nb1)[c];
        float acc = 0.0f;
        for (int k = 0; k < K; ++k) acc = __fadd_rn(acc, __fmul_rn(wc[k], win[k]));
        reinterpret_cast<float*>(y + tok * y_nb1)[c] = acc;
        for (int k = 0; k < K - 1; ++k) win[k] = win[k + 1];
    }
    for (int k = 0; k < K - 1; ++k) st[k * C + c] = win[k];
}

}  // namespace

void conv1d_scan(const Tensor& dst, Ctx& ctx) {
    const Tensor& x = *dst.src[0];
    const Tensor& state = *dst.src[2];
    const Tensor& runs = *dst.src[3];
    const Tensor& order = *dst.src[4];
    const int64_t C = x.ne[0];
    const int K = dst.get_params<Conv1dScanParams>().d_conv;
    if (K > kMaxK) throw std::invalid_argument("conv1d_scan: the CUDA kernel handles kernels up to 16 wide");
    // The runs were checked by core before the graph ran (check_index_inputs; SEMANTICS.md
    // section 2): no state is written on a bad table.
    const int64_t n = runs.ne[1] * C;
    if (n == 0) return;
    LS_LAUNCH(conv1d_scan_kernel, blocks_for(n, kThreads), kThreads, ctx.stream)(
        dptr(x), int64_t(x.nb[1]), reinterpret_cast<const float*>(dptr(*dst.src[1])), reinterpret_cast<float*>(dptr(state)),
        int64_t(state.nb[1]), reinterpret_cast<const int32_t*>(dptr(runs)), reinterpret_cast<const int32_t*>(dptr(order)),
        dptr(dst), int64_t(dst.nb[1]), C, K, runs.ne[1]);
    LS_CUDA_CHECK_LAUNCH("conv1d_scan_kernel");
}

bool supports_conv1d_scan(const Tensor& n) {
    const Tensor* a = n.src[0];
    const Tensor* b = n.src[1];
    return f32_elems(a) && a->is_contiguous() && f32_elems(b) && b->is_contiguous() && f32_elems(n.src[2]) &&
           n.src[2]->is_contiguous() && host_i32(n.src[3]) && host_i32(n.src[4]) && f32_elems(&n) && n.is_contiguous();
}

}  // namespace ls::cuda
