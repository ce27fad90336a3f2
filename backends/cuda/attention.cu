#include <algorithm>
#include <stdexcept>
#include <vector>

#include "backends/cuda/kernels.cuh"
#include "backends/cuda/qdev.h"
#include "core/attention_rule.h"
#include "core/op_params.h"

namespace ls::cuda {
namespace {

// One block per (head h, query t), as ref::attention (SEMANTICS.md section 1): the query
// (s, p) reads keys max(0, p-W+1)..p of slot s, key k at cache row s*R + k mod R.
//  1. score_k = float(q . k in double, exact products, order free) * scale, soft-capped
//     with det_tanh; one warp per key;
//  2. max of the scores (exact), e_k = det_exp(score_k - max), their sum in double;
//  3. weights w_k = float(double(e_k) / sum);
//  4. out_i = fma(w_k, v_k,i, out_i) over the keys in order, one thread per output value:
//     the float chain of the reference, unsplit.
// Scores live in `scratch` (n_max floats per (h, t)), written and read by the same block.
__global__ void attention_kernel(const float* q, Shape sq, const uint8_t* kc, DType kt, int64_t k_nb1, const uint8_t* vc, DType vt,
                                 int64_t v_nb1, const int32_t* pos, const int32_t* seq, int64_t t0, int32_t W, int64_t R,
                                 int64_t group, float scale, float softcap, int64_t Dv, uint8_t* out, Shape so, float* scratch,
                                 int64_t n_max) {
    __shared__ double sd[32];
    __shared__ float sf[32];
    const int64_t h = blockIdx.x, t = t0 + blockIdx.y;
    const int64_t Dk = sq.ne[0], hk = h / group;
    const int64_t s = seq[t], pt = pos[t];
    const int64_t k0 = W > 0 ? (pt - W + 1 > 0 ? pt - W + 1 : 0) : 0;
    const int64_t n = pt - k0 + 1;
    float* sc = scratch + (int64_t(blockIdx.y) * gridDim.x + h) * n_max;
    const float* qh = reinterpret_cast<const float*>(reinterpret_cast<const uint8_t*>(q) + h * sq.nb[1] + t * sq.nb[2]);
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, nw = blockDim.x / 32;

    // 1. scores
    for (int64_t j = warp; j < n; j += nw) {
        const uint8_t* krow = kc + (s * R + (k0 + j) % R) * k_nb1;
        double d = 0;
        for (int64_t i = lane; i < Dk; i += 32) d += double(qh[i]) * double(cudaq::deq_elem(kt, krow, hk * Dk + i));
        d = warp_sum(d);
        if (lane == 0) {
            float x = __fmul_rn(float(d), scale);
            if (softcap > 0) x = __fmul_rn(softcap, det_tanh(__fdiv_rn(x, softcap)));
            sc[j] = x;
        }
    }
    __syncthreads();
    // 2. max, exponentials, their sum
    float mx = -INFINITY;
    for (int64_t j = threadIdx.x; j < n; j += blockDim.x) mx = fmaxf(mx, sc[j]);
    mx = block_max(mx, sf);
    double sum = 0;
    for (int64_t j = threadIdx.x; j < n; j += blockDim.x) {
        const float e = det_exp(__fsub_rn(sc[j], mx));
        sc[j] = e;
        sum += e;
    }
    sum = block_sum(sum, sd);
    // 3. weights
    for (int64_t j = threadIdx.x; j < n; j += blockDim.x) sc[j] = float(double(sc[j]) / sum);
    __syncthreads();
    // 4. the weighted sum of values, key by key in order
    float* po = reinterpret_cast<float*>(out + h * so.nb[1] + t * so.nb[2]);
    for (int64_t i = threadIdx.x; i < Dv; i += blockDim.x) {
        float acc = 0;
        for (int64_t j = 0; j < n; ++j) {
            const uint8_t* vrow = vc + (s * R + (k0 + j) % R) * v_nb1;
            acc = __fmaf_rn(sc[j], cudaq::deq_elem(vt, vrow, hk * Dv + i), acc);
        }
        po[i] = acc;
    }
}

constexpr size_t kMaxScratchFloats = size_t(64) << 20;  // 256 MiB of scores per launch at most

}  // namespace

void attention(const Tensor& dst, Ctx& ctx) {
    const Tensor& q = *dst.src[0];
    const Tensor& k = *dst.src[1];
    const Tensor& v = *dst.src[2];
    const AttentionParams p = dst.get_params<AttentionParams>();
    const int64_t H = q.ne[1], T = q.ne[2], Dv = dst.ne[0];
    const int64_t R = p.ring_rows, n_seq = k.ne[1] / R, group = H / p.n_head_kv;
    if (T == 0 || H == 0) return;
    // Positions and sequences are checked on the host before anything runs (the reference's
    // messages), and give the longest key run, which sizes the score scratch.
    const std::vector<uint8_t> pos_b = ctx.host_bytes(*dst.src[3]), seq_b = ctx.host_bytes(*dst.src[4]);
    const int32_t* pos = reinterpret_cast<const int32_t*>(pos_b.data());
    const int32_t* seq = reinterpret_cast<const int32_t*>(seq_b.data());
    int64_t n_max = 1;
    for (int64_t t = 0; t < T; ++t) {
        check_attention_query(seq[t], pos[t], p.window, R, n_seq);
        n_max = std::max(n_max, int64_t(pos[t]) - attn_first_key(pos[t], p.window) + 1);
    }
    // Queries per launch so that the scores fit the scratch cap.
    const int64_t per_query = H * n_max;
    const int64_t tq = std::max<int64_t>(1, std::min<int64_t>({T, int64_t(kMaxScratchFloats) / per_query, 65535}));
    auto* scratch = static_cast<float*>(ctx.temp(size_t(tq * per_query) * sizeof(float)));
    const auto* pos_d = reinterpret_cast<const int32_t*>(dptr(*dst.src[3]));
    const auto* seq_d = reinterpret_cast<const int32_t*>(dptr(*dst.src[4]));
    for (int64_t t0 = 0; t0 < T; t0 += tq) {
        const int64_t nt = std::min(tq, T - t0);
        attention_kernel<<<dim3(unsigned(H), unsigned(nt)), 128, 0, ctx.stream>>>(
            reinterpret_cast<const float*>(dptr(q)), shape_of(q), dptr(k), k.type, int64_t(k.nb[1]), dptr(v), v.type,
            int64_t(v.nb[1]), pos_d, seq_d, t0, p.window, R, group, p.scale, p.softcap, Dv, dptr(dst), shape_of(dst), scratch, n_max);
        LS_CUDA_CHECK_LAUNCH("attention_kernel");
    }
}

}  // namespace ls::cuda
