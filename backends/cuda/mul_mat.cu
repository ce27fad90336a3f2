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

// The decode kernels over mats (fewer than kTiledMinRows activation rows).
template <DType W> void launch_decode(const DecodeMats& mats, const Ctx& ctx, const uint8_t* act, int64_t arb, int64_t n_mrows, int64_t nb) {
    const unsigned gy = unsigned((n_mrows + kMRows - 1) / kMRows);
    if (const int ways = split_ways<W>(nb); ways > 1 && ctx.split_decode) {
        LS_LAUNCH(dot_q_split_kernel<W>, dim3(blocks_for(mats.rows(), kWarps / ways), gy), dim3(32, kWarps), ctx.stream)(mats, act, arb,
                                                                                                                   n_mrows, nb, ways);
        return;
    }
    LS_LAUNCH(dot_q_kernel<W>, dim3(blocks_for(mats.rows(), kWarps), gy), dim3(32, kWarps), ctx.stream)(mats, act, arb, n_mrows, nb);
}

template <DType W> void launch_q(const Ctx& ctx, const Tensor& w, const uint8_t* act, int64_t arb, int64_t n_mrows, const Tensor& dst) {
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
    launch_decode<W>(one_mat(dptr(w), int64_t(w.nb[1]), N, dptr(dst), shape_of(dst)), ctx, act, arb, n_mrows, nb);
}

// mul_mat's step 1: the activation rows of x quantized to `at` in the activation buffer,
// unless the previous mul_mat of this graph (or a norm, rms_norm_mul_mat) already left exactly
// these there (q/k/v and gate/up share their input).
uint8_t* act_rows(const Tensor& x, DType at, int64_t K, int64_t n_mrows, Ctx& ctx) {
    const int64_t arb = int64_t(row_bytes(at, K));
    const bool same = ctx.act_rows.src == &x && ctx.act_rows.type == at;
    auto* act = static_cast<uint8_t*>(ctx.act_buffer(size_t(arb * n_mrows)));
    if (!same) {
        launch_quantize_act(at, dptr(x), shape_of(x), act, arb, K, n_mrows, ctx.stream);
        LS_CUDA_CHECK_LAUNCH("quantize_act_kernel");
        ctx.act_rows.src = &x;
        ctx.act_rows.type = at;
    }
    return act;
}

int64_t mrows_of(const Tensor& x) { return x.ne[1] * x.ne[2] * x.ne[3]; }

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
    const int64_t K = w.ne[0], N = w.ne[1], n_mrows = mrows_of(x);
    if (N == 0 || n_mrows == 0) return;
    const DType at = vec_dot_type(w.type);
    const int64_t arb = int64_t(row_bytes(at, K));
    const uint8_t* act = act_rows(x, at, K, n_mrows, ctx);
    const int64_t gy = (n_mrows + kMRows - 1) / kMRows;
    if (gy > 65535) throw std::runtime_error("cuda mul_mat: " + std::to_string(n_mrows) + " activation rows exceed one launch");
    const dim3 grid(blocks_for(N, kWarps), unsigned(gy));
    if (w.type == DType::F32 || w.type == DType::F16 || w.type == DType::BF16)
        LS_LAUNCH(dot_f_kernel, grid, dim3(32, kWarps), ctx.stream)(w.type, dptr(w), int64_t(w.nb[1]), N, act, arb, n_mrows, K, dptr(dst),
                                                                    shape_of(dst));
    else if (!cudaq::with_quant_weight(w.type, [&](auto wt) { launch_q<decltype(wt)::value>(ctx, w, act, arb, n_mrows, dst); }))
        throw std::logic_error(std::string("cuda mul_mat: weight type ") + dtype_name(w.type) + " reached the kernel");
    LS_CUDA_CHECK_LAUNCH("mul_mat dot kernel");
}

int mul_mat_run(const std::vector<Tensor*>& nodes, size_t i) {
    const Tensor& a = *nodes[i];
    if (a.op != OpId::MUL_MAT || !supports_mul_mat(a)) return 0;
    const Tensor& w = *a.src[0];
    const int64_t n_mrows = mrows_of(*a.src[1]);
    if (w.type == DType::F32 || w.type == DType::F16 || w.type == DType::BF16 || n_mrows == 0 || n_mrows >= kTiledMinRows ||
        w.ne[1] == 0)
        return 1;
    int n = 1;
    while (n < kMaxMats && i + size_t(n) < nodes.size()) {
        const Tensor& b = *nodes[i + size_t(n)];
        if (b.op != OpId::MUL_MAT || b.src[1] != a.src[1] || !supports_mul_mat(b) || b.src[0]->type != w.type ||
            b.src[0]->ne[0] != w.ne[0] || b.src[0]->ne[1] == 0)
            break;
        ++n;
    }
    return n;
}

void mul_mat_group(Tensor* const* mms, int n, Ctx& ctx) {
    if (n == 1) return mul_mat(*mms[0], ctx);
    const Tensor& w0 = *mms[0]->src[0];
    const Tensor& x = *mms[0]->src[1];
    const int64_t K = w0.ne[0], n_mrows = mrows_of(x);
    const DType at = vec_dot_type(w0.type);
    const uint8_t* act = act_rows(x, at, K, n_mrows, ctx);
    DecodeMats m{};
    m.count = n;
    int64_t rows = 0;
    for (int i = 0; i < n; ++i) {
        const Tensor& w = *mms[i]->src[0];
        m.w[i] = dptr(w), m.w_nb1[i] = int64_t(w.nb[1]);
        m.dst[i] = dptr(*mms[i]), m.sd[i] = shape_of(*mms[i]);
        m.n_end[i] = rows += w.ne[1];
    }
    const int64_t arb = int64_t(row_bytes(at, K)), nb = K / block_size(w0.type);
    if (!cudaq::with_quant_weight(w0.type, [&](auto wt) { launch_decode<decltype(wt)::value>(m, ctx, act, arb, n_mrows, nb); }))
        throw std::logic_error(std::string("cuda mul_mat: weight type ") + dtype_name(w0.type) + " reached the kernel");
    LS_CUDA_CHECK_LAUNCH("mul_mat dot kernel (grouped)");
}

bool supports_mul_mat(const Tensor& n) {
    const Tensor* a = n.src[0];
    const Tensor* b = n.src[1];
    return a && cudaq::mul_mat_supported(a->type) && f32_elems(b) && f32_elems(&n);
}

}  // namespace ls::cuda
