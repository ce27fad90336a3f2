#include <cstdlib>
#include <stdexcept>
#include <string>

#include "backends/cuda/act_rows.cuh"
#include "backends/cuda/elementwise.cuh"
#include "backends/cuda/mul_mat.cuh"
#include "backends/cuda/quant_device.cuh"
#include "backends/cuda/support_predicates.h"
#include "core/quant/quant.h"

namespace ls::cuda {
namespace {

// Step 2, float weights: canon_dot of the rows (core/rules/canon.h rule 5) by a warp, lane l
// holding partial sum l. The blocks and warps of dot_q_kernel.
__global__ void __launch_bounds__(32 * kWarps) dot_f_kernel(DType wt, const uint8_t* w, int64_t w_nb1, int64_t N, const uint8_t* act,
                                                            int64_t act_row_bytes, int64_t n_mrows, int64_t K, uint8_t* dst, Shape sd) {
    const int64_t n = int64_t(blockIdx.x) * kWarps + threadIdx.y;
    if (n >= N) return;
    const uint8_t* wrow = w + n * w_nb1;
    const int64_t m0 = int64_t(blockIdx.y) * kMRows, m1 = m0 + kMRows < n_mrows ? m0 + kMRows : n_mrows;
    for (int64_t m = m0; m < m1; ++m) {
        const uint8_t* arow = act + m * act_row_bytes;
        const float s = warp_canon_sum(K, int(threadIdx.x), [&](int64_t e) { return cudaq::prod_f(wt, wrow, arow, e); });
        if (threadIdx.x == 0) *reinterpret_cast<float*>(dst + row_offset(sd, m) + n * 4) = s;
    }
}

template <DType W> void launch_q(dim3 grid, const Ctx& ctx, const Tensor& w, const uint8_t* act, int64_t arb, int64_t n_mrows,
                                 const Tensor& dst) {
    const int64_t nb = w.ne[0] / block_size(W), N = w.ne[1];
    if (n_mrows >= kTiledMinRows) {
        const int64_t tm = ctx.int8_mma ? kMmaM : kDpM, gy = (n_mrows + tm - 1) / tm;
        if (gy > 65535) throw std::runtime_error("cuda mul_mat: " + std::to_string(n_mrows) + " activation rows exceed one launch");
        const PlainRows p{dptr(w), int64_t(w.nb[1]), N, act, arb, n_mrows, dptr(dst), shape_of(dst)};
        if (ctx.int8_mma)
            LS_LAUNCH(dot_q_mma_kernel<W>, dim3(unsigned((N + kMmaN - 1) / kMmaN), unsigned(gy)), 32 * kMmaWarps, ctx.stream)(p, nb);
        else
            LS_LAUNCH(dot_q_tiled_kernel<W>, dim3(unsigned((N + kDpN - 1) / kDpN), unsigned(gy)), kDpThreads, ctx.stream)(p, nb);
        return;
    }
    if (const int ways = split_ways<W>(nb); ways > 1 && ctx.split_decode) {
        const dim3 sgrid(blocks_for(N, kWarps / ways), grid.y);
        LS_LAUNCH(dot_q_split_kernel<W>, sgrid, dim3(32, kWarps), ctx.stream)(dptr(w), int64_t(w.nb[1]), N, act, arb, n_mrows, nb,
                                                                            dptr(dst), shape_of(dst), ways);
        return;
    }
    LS_LAUNCH(dot_q_kernel<W>, grid, dim3(32, kWarps), ctx.stream)(dptr(w), int64_t(w.nb[1]), N, act, arb, n_mrows, nb, dptr(dst),
                                                                 shape_of(dst));
}

}  // namespace

bool int8_mma_usable(int cc_major) {
    if (cc_major < 8) return false;
    if (const char* e = std::getenv("LOCKSTEP_CUDA_NO_MMA"); e && *e && std::string(e) != "0") return false;
    cudaFuncAttributes a{};
    if (cudaFuncGetAttributes(&a, dot_q_mma_kernel<DType::Q8_0>) != cudaSuccess) {
        (void)cudaGetLastError();  // clear it: the dp4a kernels will do
        return false;
    }
    return a.binaryVersion >= 80;
}

void mul_mat(const Tensor& dst, Ctx& ctx) {
    const Tensor& w = *dst.src[0];
    const Tensor& x = *dst.src[1];
    const int64_t K = w.ne[0], N = w.ne[1], n_mrows = x.ne[1] * x.ne[2] * x.ne[3];
    if (N == 0 || n_mrows == 0) return;
    const DType at = vec_dot_type(w.type);
    const int64_t arb = int64_t(row_bytes(at, K));
    // The activation rows quantized to `at`, unless the previous mul_mat of this graph
    // already left exactly these in the buffer (q/k/v and gate/up share their input).
    const bool same = ctx.act_rows.src == &x && ctx.act_rows.type == at;
    auto* act = static_cast<uint8_t*>(ctx.act_buffer(size_t(arb * n_mrows)));
    if (!same) {
        launch_quantize_act(at, dptr(x), shape_of(x), act, arb, K, n_mrows, ctx.stream);
        LS_CUDA_CHECK_LAUNCH("quantize_act_kernel");
        ctx.act_rows.src = &x;
        ctx.act_rows.type = at;
    }

    const int64_t gy = (n_mrows + kMRows - 1) / kMRows;
    if (gy > 65535) throw std::runtime_error("cuda mul_mat: " + std::to_string(n_mrows) + " activation rows exceed one launch");
    const dim3 grid(blocks_for(N, kWarps), unsigned(gy));
    if (w.type == DType::F32 || w.type == DType::F16 || w.type == DType::BF16)
        LS_LAUNCH(dot_f_kernel, grid, dim3(32, kWarps), ctx.stream)(w.type, dptr(w), int64_t(w.nb[1]), N, act, arb, n_mrows, K, dptr(dst),
                                                                    shape_of(dst));
    else if (!cudaq::with_quant_weight(w.type, [&](auto wt) { launch_q<decltype(wt)::value>(grid, ctx, w, act, arb, n_mrows, dst); }))
        throw std::logic_error(std::string("cuda mul_mat: weight type ") + dtype_name(w.type) + " reached the kernel");
    LS_CUDA_CHECK_LAUNCH("mul_mat dot kernel");
}

bool supports_mul_mat(const Tensor& n) {
    const Tensor* a = n.src[0];
    const Tensor* b = n.src[1];
    return a && cudaq::mul_mat_supported(a->type) && f32_elems(b) && f32_elems(&n);
}

}  // namespace ls::cuda
