// The attention kernels (launched by attention.cu). A header so that tests/backends/test_cuda_emu.cpp
// can run them on the host, bit for bit against ref::attention, without a GPU.
//
// Every kernel computes SEMANTICS.md section 1 exactly as ref::attention does: query (s, p)
// reads keys attn_first_key(p, W)..p of slot s, key k at cache row ring_row(s, k, R);
//  1. score_k = float(q . k in double, exact products, order free) * scale, soft-capped
//     with det_tanh;
//  2. max of the scores (exact), e_k = det_exp(score_k - max), their sum in double;
//  3. weights w_k = float(double(e_k) / sum);
//  4. out_i = fma(w_k, v_k,i, out_i) over the keys in increasing order: one float chain per
//     output value, never split.
// The kernels differ only in which thread computes what and where rows are staged.
#pragma once
#include <cstdint>

#include "backends/cuda/block_reduce.cuh"
#include "backends/cuda/quant_device.cuh"
#include "core/rules/attention_rule.h"
#include "core/quant/dtype.h"

namespace ls::cuda {
namespace {

// ---------------------------------------------------------------- any batch (decode)
// Two kernels, so that a decode step (one query per sequence, a few heads) still spreads
// over the whole GPU: pass 1 gives every key its own warp, pass 2 splits the output values
// of a head over several blocks. Scores go through `scratch` (n_max floats per (t, h)).

// Pass 1: the scores (step 1). A block per (head h, query t, kScoreKeys consecutive keys of
// its range), one warp per key.
constexpr int kScoreWarps = 8, kScoreKeys = 32;

__global__ void __launch_bounds__(kScoreWarps * 32)
attention_scores_kernel(const float* q, Shape sq, const uint8_t* kc, DType kt, int64_t k_nb1, const int32_t* pos,
                        const int32_t* seq, int64_t t0, int32_t W, int64_t R, int64_t group, float scale, float softcap,
                        float* scratch, int64_t n_max) {
    const int64_t h = blockIdx.x, tl = blockIdx.y, t = t0 + tl;
    const int64_t Dk = sq.ne[0], hk = h / group;
    const int64_t s = seq[t], pt = pos[t], k0 = attn_first_key(pt, W), n = pt - k0 + 1;
    const int64_t j0 = int64_t(blockIdx.z) * kScoreKeys, j1 = j0 + kScoreKeys < n ? j0 + kScoreKeys : n;
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    const float* qh = reinterpret_cast<const float*>(reinterpret_cast<const uint8_t*>(q) + h * sq.nb[1] + t * sq.nb[2]);
    float* sc = scratch + (tl * gridDim.x + h) * n_max;
    for (int64_t j = j0 + warp; j < j1; j += kScoreWarps) {
        const uint8_t* krow = kc + ring_row(s, k0 + j, R) * k_nb1;
        double d = 0;
        for (int64_t i = lane; i < Dk; i += 32) d += double(qh[i]) * double(cudaq::deq_elem(kt, krow, hk * Dk + i));
        d = warp_sum(d);
        if (lane == 0) {
            float x = __fmul_rn(float(d), scale);
            if (softcap > 0) x = __fmul_rn(softcap, det_tanh(__fdiv_rn(x, softcap)));
            sc[j] = x;
        }
    }
}

// Pass 2: steps 2-4. A block per (head h, query t, kPvCols consecutive output values). Every
// block of a query computes the same max and sum from the scores (the same bits: a fixed
// reduction tree), then walks the keys in chunks of kPvKeys: the chunk's weights and its
// value rows (the block's columns only) are staged in shared memory, and each of the first
// kPvCols threads extends its output's chain over the chunk's keys in order.
constexpr int kPvCols = 64, kPvKeys = 64, kPvThreads = 256;

__global__ void __launch_bounds__(kPvThreads)
attention_pv_kernel(const float* scratch, int64_t n_max, const uint8_t* vc, DType vt, int64_t v_nb1, const int32_t* pos,
                    const int32_t* seq, int64_t t0, int32_t W, int64_t R, int64_t group, int64_t Dv, uint8_t* out, Shape so) {
    __shared__ double sd[32];
    __shared__ float sf[32];
    __shared__ float wts[kPvKeys];
    __shared__ float vs[kPvKeys * kPvCols];
    const int64_t h = blockIdx.x, tl = blockIdx.y, t = t0 + tl, c0 = int64_t(blockIdx.z) * kPvCols, hk = h / group;
    const int64_t s = seq[t], pt = pos[t], k0 = attn_first_key(pt, W), n = pt - k0 + 1;
    const int tid = threadIdx.x;
    const float* sc = scratch + (tl * gridDim.x + h) * n_max;
    float mx = -INFINITY;
    for (int64_t j = tid; j < n; j += kPvThreads) mx = fmaxf(mx, sc[j]);
    mx = block_max(mx, sf);
    double sum = 0;
    for (int64_t j = tid; j < n; j += kPvThreads) sum += det_exp(__fsub_rn(sc[j], mx));
    sum = block_sum(sum, sd);
    float acc = 0;
    for (int64_t j0 = 0; j0 < n; j0 += kPvKeys) {
        const int nk = int(n - j0 < kPvKeys ? n - j0 : kPvKeys);
        __syncthreads();  // the previous chunk has been used
        for (int j = tid; j < nk; j += kPvThreads) wts[j] = float(double(det_exp(__fsub_rn(sc[j0 + j], mx))) / sum);
        for (int e = tid; e < nk * kPvCols; e += kPvThreads) {
            const int j = e / kPvCols, c = e % kPvCols;
            vs[e] = c0 + c < Dv ? cudaq::deq_elem(vt, vc + ring_row(s, k0 + j0 + j, R) * v_nb1, hk * Dv + c0 + c) : 0.0f;
        }
        __syncthreads();
        if (tid < kPvCols)
            for (int j = 0; j < nk; ++j) acc = __fmaf_rn(wts[j], vs[j * kPvCols + tid], acc);
    }
    if (tid < kPvCols && c0 + tid < Dv)
        *reinterpret_cast<float*>(out + h * so.nb[1] + t * so.nb[2] + (c0 + tid) * 4) = acc;
}

// ---------------------------------------------------------------- one sequence (prefill)
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
    auto first_key = [&](int64_t p) { return attn_first_key(p, W); };
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
            rows[j * (Dk + 1) + d] = cudaq::deq_elem(kt, kc + ring_row(slot, c0 + j, R) * k_nb1, hk * Dk + d);
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
            rows[j * Dv + d] = cudaq::deq_elem(vt, vc + ring_row(slot, c0 + j, R) * v_nb1, hk * Dv + d);
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

}  // namespace
}  // namespace ls::cuda
