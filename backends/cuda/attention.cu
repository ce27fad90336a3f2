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

// Prefill of one sequence (every query of the ubatch in the same slot, positions
// consecutive): a block per (head h, tile of kTQ consecutive queries) shares each key and
// value row among its queries through shared memory, instead of every query reading the
// whole key range again. The arithmetic per query is attention_kernel's: a score is one
// double sum of exact products (order free), the softmax is the same two passes, and each
// output value is the fma chain over that query's keys in increasing order (the tile walks
// keys in increasing order and a query skips keys outside its range).
constexpr int kTQ = 16, kTileThreads = 256, kTileFloats = 4096;  // 16 KiB of key or value rows

__global__ void __launch_bounds__(kTileThreads)
attention_tiled_kernel(const float* q, Shape sq, const uint8_t* kc, DType kt, int64_t k_nb1, const uint8_t* vc, DType vt,
                       int64_t v_nb1, int64_t slot, int64_t p_first, int64_t T, int32_t W, int64_t R, int64_t group, float scale,
                       float softcap, int64_t Dv, uint8_t* out, Shape so, float* scratch, int64_t n_max) {
    // Key rows and queries are stored with a stride of Dk + 1 floats: the 16 threads of a
    // query read 16 different keys at the same offset, which would otherwise share a bank.
    __shared__ float rows[kTileFloats + 32];  // a chunk of key (pass 1) or value (pass 3) rows
    __shared__ float qs[kTQ * 257];           // the tile's queries (Dk <= 256, checked by the host)
    const int64_t h = blockIdx.x, t0 = int64_t(blockIdx.y) * kTQ, Dk = sq.ne[0], hk = h / group;
    const int nq = int(T - t0 < kTQ ? T - t0 : kTQ);
    const int tid = threadIdx.x;
    auto first_key = [&](int64_t p) -> int64_t { return W > 0 ? (p - W + 1 > 0 ? p - W + 1 : 0) : 0; };
    const int64_t lo = first_key(p_first + t0), hi = p_first + t0 + nq - 1;  // keys lo..hi (union)
    for (int64_t i = tid; i < int64_t(nq) * Dk; i += kTileThreads) {
        const int64_t a = i / Dk, d = i % Dk;
        qs[a * (Dk + 1) + d] = *reinterpret_cast<const float*>(reinterpret_cast<const uint8_t*>(q) + h * sq.nb[1] + (t0 + a) * sq.nb[2] + d * 4);
    }
    // 1. scores, chunk by chunk: thread (a, j) of the chunk computes query a's score of key j.
    const int kc_keys = int(kTileFloats / Dk) < kTileThreads / kTQ ? int(kTileFloats / Dk) : kTileThreads / kTQ;
    for (int64_t c0 = lo; c0 <= hi; c0 += kc_keys) {
        const int nk = int(hi - c0 + 1 < kc_keys ? hi - c0 + 1 : kc_keys);
        __syncthreads();  // rows (and qs, the first time) are free / written
        for (int64_t i = tid; i < int64_t(nk) * Dk; i += kTileThreads) {
            const int64_t j = i / Dk, d = i % Dk;
            rows[j * (Dk + 1) + d] = cudaq::deq_elem(kt, kc + (slot * R + (c0 + j) % R) * k_nb1, hk * Dk + d);
        }
        __syncthreads();
        const int a = tid / kc_keys, j = tid % kc_keys;
        if (a < nq && j < nk) {
            const int64_t p = p_first + t0 + a, key = c0 + j, k0 = first_key(p);
            if (key >= k0 && key <= p) {
                double d = 0;
                for (int64_t e = 0; e < Dk; ++e) d += double(qs[a * (Dk + 1) + e]) * double(rows[j * (Dk + 1) + e]);
                float x = __fmul_rn(float(d), scale);
                if (softcap > 0) x = __fmul_rn(softcap, det_tanh(__fdiv_rn(x, softcap)));
                scratch[((t0 + a) * gridDim.x + h) * n_max + (key - k0)] = x;
            }
        }
    }
    __syncthreads();
    // 2. softmax per query, one warp per query: max (exact), exponentials, double sum, weights.
    const int lane = tid % 32, warp = tid / 32;
    for (int a = warp; a < nq; a += kTileThreads / 32) {
        const int64_t p = p_first + t0 + a, n = p - first_key(p) + 1;
        float* sc = scratch + ((t0 + a) * gridDim.x + h) * n_max;
        float mx = -INFINITY;
        for (int64_t j = lane; j < n; j += 32) mx = fmaxf(mx, sc[j]);
        for (int o = 16; o > 0; o >>= 1) mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, o));
        double sum = 0;
        for (int64_t j = lane; j < n; j += 32) {
            const float e = det_exp(__fsub_rn(sc[j], mx));
            sc[j] = e;
            sum += e;
        }
        for (int o = 16; o > 0; o >>= 1) sum += __shfl_xor_sync(0xffffffffu, sum, o);
        for (int64_t j = lane; j < n; j += 32) sc[j] = float(double(sc[j]) / sum);
    }
    // 3. values: thread (a, l) owns query a's outputs l, l + 16, ...; keys in increasing order.
    const int a = tid / 16, l = tid % 16;
    const int64_t pa = p_first + t0 + a, k0a = first_key(pa);
    const float* wa = scratch + ((t0 + a) * gridDim.x + h) * n_max;
    constexpr int kMaxOut = 16;  // Dv <= 256 (checked by the host)
    float acc[kMaxOut];
    for (int o = 0; o < kMaxOut; ++o) acc[o] = 0;
    const int vc_keys = int(kTileFloats / Dv);
    for (int64_t c0 = lo; c0 <= hi; c0 += vc_keys) {
        const int nk = int(hi - c0 + 1 < vc_keys ? hi - c0 + 1 : vc_keys);
        __syncthreads();  // the weights are written; rows are free
        for (int64_t i = tid; i < int64_t(nk) * Dv; i += kTileThreads) {
            const int64_t j = i / Dv, d = i % Dv;
            rows[j * Dv + d] = cudaq::deq_elem(vt, vc + (slot * R + (c0 + j) % R) * v_nb1, hk * Dv + d);
        }
        __syncthreads();
        if (a < nq)
            for (int j = 0; j < nk; ++j) {
                const int64_t key = c0 + j;
                if (key < k0a || key > pa) continue;
                const float w = wa[key - k0a];
                for (int o = 0; o < kMaxOut; ++o) {
                    const int64_t i = l + 16 * int64_t(o);
                    if (i < Dv) acc[o] = __fmaf_rn(w, rows[j * Dv + i], acc[o]);
                }
            }
    }
    if (a < nq) {
        float* po = reinterpret_cast<float*>(out + h * so.nb[1] + (t0 + a) * so.nb[2]);
        for (int o = 0; o < kMaxOut; ++o) {
            const int64_t i = l + 16 * int64_t(o);
            if (i < Dv) po[i] = acc[o];
        }
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
    // One sequence at consecutive positions, several queries: the tiled kernel.
    bool one_run = T >= 2 && q.ne[0] <= 256 && Dv <= 256 && q.ne[0] > 0 && Dv > 0;
    for (int64_t t = 1; one_run && t < T; ++t) one_run = seq[t] == seq[0] && pos[t] == pos[0] + t;
    if (one_run && T * H * n_max <= int64_t(kMaxScratchFloats) && (T + kTQ - 1) / kTQ <= 65535) {
        auto* scratch = static_cast<float*>(ctx.temp(size_t(T * H * n_max) * sizeof(float)));
        attention_tiled_kernel<<<dim3(unsigned(H), unsigned((T + kTQ - 1) / kTQ)), kTileThreads, 0, ctx.stream>>>(
            reinterpret_cast<const float*>(dptr(q)), shape_of(q), dptr(k), k.type, int64_t(k.nb[1]), dptr(v), v.type,
            int64_t(v.nb[1]), seq[0], pos[0], T, p.window, R, group, p.scale, p.softcap, Dv, dptr(dst), shape_of(dst), scratch,
            n_max);
        LS_CUDA_CHECK_LAUNCH("attention_tiled_kernel");
        return;
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
