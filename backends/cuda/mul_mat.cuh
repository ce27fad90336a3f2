// The quantized-weight kernels of mul_mat (step 2 of core/ref/mul_mat.cpp: every output is
// cudaq::row_dot of a weight row and a quantized activation row). A header so that
// tests/backends/test_cuda_emu.cpp runs each of them on the host, bit for bit against the reference.
// Launched by mul_mat.cu:
//   dot_q_split_kernel  fewer than kTiledMinRows activation rows (decode), rows of several
//                       groups of blocks: 2 or 4 warps per weight row;
//   dot_q_kernel        the same, rows of one group or of types the split does not take: a
//                       warp per weight row;
//   dot_q_mma_kernel    more, on sm_80 and later: tiles on the tensor cores;
//   dot_q_tiled_kernel  more, before sm_80: tiles on __dp4a.
// All three produce the same bits: the integer parts of the block dot products are exact in
// any order and any grouping, and each output's float chain runs over the blocks in order.
#pragma once
#include <cstdint>
#include <type_traits>

#include "backends/cuda/block_reduce.cuh"
#include "backends/cuda/mma.cuh"
#include "backends/cuda/quant_device.cuh"
#include "backends/cuda/warp_dot.cuh"

namespace ls::cuda {

// From this many activation rows on, a tiled kernel (below it, one warp per weight row).
constexpr int64_t kTiledMinRows = 32;

// Below the tiled kernels: a block takes kWarps weight rows (one warp each) and kMRows
// activation rows (each warp goes through them in turn, the weight row's blocks staying in
// L1). A block of one warp would cap an SM at 32 warps.
constexpr int kWarps = 4, kMRows = 4;

// The weight matrices of one decode launch: up to kMaxMats that read the same activation rows
// (a layer's q, k and v; gate and up), of one weight type and row length, their rows taken
// one after another: row n of the launch is row n - start(i) of matrix i, the first whose
// n_end is past n. A launch for each of them costs a few microseconds of a decode step whatever
// the matrix; one launch over all their rows, the same kernels and the same bits.
constexpr int kMaxMats = 3;
struct DecodeMats {
    const uint8_t* w[kMaxMats];
    uint8_t* dst[kMaxMats];
    Shape sd[kMaxMats];
    int64_t w_nb1[kMaxMats];
    int64_t n_end[kMaxMats];  // rows of matrices 0..i together
    int64_t count;
    // The launch's rows (of every matrix).
    __host__ __device__ int64_t rows() const { return n_end[count - 1]; }
    // Matrix i and its row of launch row n (< rows()).
    __device__ int mat(int64_t n) const { return n < n_end[0] ? 0 : count > 1 && n < n_end[1] ? 1 : 2; }
    __device__ int64_t row(int i, int64_t n) const { return i == 0 ? n : n - n_end[i - 1]; }
    __device__ const uint8_t* w_row(int64_t n) const {
        const int i = mat(n);
        return w[i] + row(i, n) * w_nb1[i];
    }
    __device__ float* out(int64_t n, int64_t m) const {
        const int i = mat(n);
        return reinterpret_cast<float*>(dst[i] + row_offset(sd[i], m) + row(i, n) * 4);
    }
};
// One matrix (weight rows of w_nb1 bytes, N of them) into dst (host side).
inline DecodeMats one_mat(const uint8_t* w, int64_t w_nb1, int64_t N, uint8_t* dst, const Shape& sd) {
    DecodeMats m{};
    m.w[0] = w, m.dst[0] = dst, m.sd[0] = sd, m.w_nb1[0] = w_nb1, m.n_end[0] = N, m.count = 1;
    return m;
}

template <DType W>
__global__ void __launch_bounds__(32 * kWarps) dot_q_kernel(DecodeMats mats, const uint8_t* act, int64_t act_row_bytes, int64_t n_mrows,
                                                            int64_t nb) {
    using D = cudaq::WDot<W>;
    const int64_t n = int64_t(blockIdx.x) * kWarps + threadIdx.y;
    if (n >= mats.rows()) return;  // the whole warp
    const int lane = threadIdx.x;
    const auto* x = reinterpret_cast<const typename D::WB*>(mats.w_row(n));
    const int64_t m0 = int64_t(blockIdx.y) * kMRows, m1 = m0 + kMRows < n_mrows ? m0 + kMRows : n_mrows;
    for (int64_t m = m0; m < m1; ++m) {
        const auto* y = reinterpret_cast<const typename D::AB*>(act + m * act_row_bytes);
        const float r = warp_row_dot<W>(x, y, nb, lane);
        if (lane == 0) *mats.out(n, m) = r;
    }
}

// Decode over long rows: a block's kWarps warps split each weight row's blocks among
// `ways` of them (2 or 4; kWarps / ways weight rows per block), so that a row's bytes are
// read by several warps at once instead of one warp walking the row: the matvecs were
// latency-bound (0.7-1.1 TB/s of an H200's 4.8). Warp part p takes the groups of kPer blocks
// (as warp_row_dot deals them to its lanes) g = p, p + ways, ..., and writes each block's
// term(s), the step run on zero sums as warp_row_dot's lanes compute them, to shared memory,
// for each of the block's activation rows (the weight block read once for all of them). Then
// lane m of the row's first warp runs the float chain of activation row m over the blocks in
// order: the same additions in the same order as warp_row_dot, so the same bits. For the
// types whose step is one add per chain (kStepIsOneAdd) and rows of at most kSplitMaxBlocks.
template <DType W> constexpr int kSplitMaxBlocks = cudaq::kBlockElems<W> == qb::QK ? 512 : 128;
// The warps per weight row for a row of nb blocks (1: dot_q_kernel instead).
template <DType W> __host__ __device__ inline int split_ways(int64_t nb) {
    if constexpr (!kStepIsOneAdd<W>) return 1;
    else {
        constexpr int kPer = 32 / cudaq::kSubsPerBlock<W>;
        const int64_t groups = (nb + kPer - 1) / kPer;
        if (nb > kSplitMaxBlocks<W> || groups < 2) return 1;
        return groups >= 4 ? 4 : 2;
    }
}

template <DType W>
__global__ void __launch_bounds__(32 * kWarps) dot_q_split_kernel(DecodeMats mats, const uint8_t* act, int64_t act_row_bytes,
                                                                  int64_t n_mrows, int64_t nb, int ways) {
    using D = cudaq::WDot<W>;
    constexpr int S = cudaq::kSubsPerBlock<W>, kPer = 32 / S, kMaxB = kSplitMaxBlocks<W>;
    constexpr int kRows = kWarps / 2;  // weight rows per block at most (ways >= 2)
    // Row stride kMaxB + 1: the chain's lanes (one activation row each) read other banks.
    __shared__ float ts[kRows][kMRows][kMaxB + 1];
    __shared__ float tms[D::has_min ? kRows : 1][D::has_min ? kMRows : 1][D::has_min ? kMaxB + 1 : 1];
    const int r = int(threadIdx.y) / ways, part = int(threadIdx.y) % ways, lane = threadIdx.x, jb = lane / S;
    const int64_t n = int64_t(blockIdx.x) * (kWarps / ways) + r;
    // A row past the last (the grid's tail block) skips the work but still reaches the barrier.
    const bool row_live = n < mats.rows();
    const int64_t m0 = int64_t(blockIdx.y) * kMRows;
    const int mc = int(n_mrows - m0 < kMRows ? n_mrows - m0 : kMRows);
    const auto* x = reinterpret_cast<const typename D::WB*>(row_live ? mats.w_row(n) : nullptr);
    for (int64_t g = part; row_live && g * kPer < nb; g += ways) {
        const int64_t b = g * kPer + jb;
        const bool live = b < nb;
        const auto& xb = x[live ? b : 0];
        for (int m = 0; m < mc; ++m) {
            const auto* y = reinterpret_cast<const typename D::AB*>(act + (m0 + m) * act_row_bytes);
            const cudaq::Isum is = warp_block_isum<W>(xb, y[live ? b : 0], live, lane);
            if (live && lane % S == 0) {
                float t = 0, tm = 0;
                D::step(xb, y[b], is, t, tm);
                ts[r][m][b] = t;
                if constexpr (D::has_min) tms[r][m][b] = tm;
            }
        }
    }
    __syncthreads();
    if (!row_live || part != 0 || lane >= mc) return;
    float sum = 0, msum = 0;
    for (int64_t b = 0; b < nb; ++b) {
        sum = __fadd_rn(sum, ts[r][lane][b]);
        if constexpr (D::has_min) msum = __fadd_rn(msum, tms[r][lane][b]);
    }
    *mats.out(n, m0 + lane) = cudaq::finish<W>(sum, msum);
}

// Blocks per stage of the tiled kernels: 4 of the 32-element types, 1 of the 256-element ones.
template <DType W> __host__ __device__ constexpr int tile_kb() { return cudaq::kBlockElems<W> == qb::QK ? 4 : 1; }

// Copies blocks b0..b0+kb-1 of TR rows into s[TR][KB], as 32-bit words where block sizes
// allow (Q4_K, Q5_K, Q8_K, Q8_1, ...), else 16-bit words (every type but MXFP4, whose 17-byte
// blocks are copied byte by byte); row(r) is the address of row r, or null past the matrix:
// such rows and blocks past the row are zero (their results are never stored). A thread
// reads kStageLoads words before it stores any: the compiler cannot move a load past a store
// that may alias it, so a copy loop of load, store waited a whole memory latency per word.
// Every thread calls it. (s is 4-byte aligned where B's size is a multiple of 4.)
constexpr int kStageLoads = 8;
template <class B, int TR, int KB, class Row>
__device__ inline void stage_blocks(B (&s)[TR][KB], Row row, int64_t b0, int kb, int tid, int n_threads) {
    using U = std::conditional_t<sizeof(B) % 4 == 0, uint32_t, std::conditional_t<sizeof(B) % 2 == 0, uint16_t, uint8_t>>;
    constexpr int WW = int(sizeof(B) / sizeof(U)), N = TR * KB * WW;
    for (int i0 = tid; i0 < N; i0 += n_threads * kStageLoads) {
        U v[kStageLoads];
        for (int a = 0; a < kStageLoads; ++a) {
            const int i = i0 + a * n_threads, r = i / (KB * WW), j = (i / WW) % KB, o = i % WW;
            v[a] = 0;
            if (i >= N) continue;
            const uint8_t* p = row(r);
            if (!p || j >= kb) continue;
            const U* src = reinterpret_cast<const U*>(p + (b0 + j) * int64_t(sizeof(B))) + o;
#if !defined(__CUDA_ARCH__)
            if (reinterpret_cast<uintptr_t>(src) % sizeof(U) != 0) __builtin_trap();  // the device would fault: the emulator shows it
#endif
            v[a] = *src;
        }
        for (int a = 0; a < kStageLoads; ++a) {
            const int i = i0 + a * n_threads, r = i / (KB * WW), j = (i / WW) % KB, o = i % WW;
            if (i < N) reinterpret_cast<U*>(&s[r][j])[o] = v[a];
        }
    }
}

// The tiles below take their rows through a map, so that mul_mat (rows in order) and
// mul_mat_id (one expert's matrix, the token rows routed to it) share them:
//   map.w_row(r)  address of the tile's weight row r, null past the matrix;
//   map.a_row(m)  address of the tile's quantized activation row m, null past the rows;
//   map.out(r, m) where the output of weight row r and activation row m goes (called only
//                 where w_row(r) and a_row(m) are not null).
// Each tile asks w_row and a_row once per row and keeps the addresses in shared memory.

// Tiled on __dp4a: a tile of kDpN weight rows x kDpM activation rows per thread block. Each
// stage copies KB consecutive blocks of every row of the tile into shared memory, so a
// weight block is read from memory once per kDpM activation rows instead of once per row.
// Every thread owns kDpR outputs and walks the blocks in order with isum / D::step.
constexpr int kDpN = 32, kDpM = 32, kDpThreads = 256, kDpR = kDpN * kDpM / kDpThreads;

template <DType W, class Map> __device__ inline void dp4a_tile(const Map& map, int64_t nb) {
    using D = cudaq::WDot<W>;
    constexpr int KB = tile_kb<W>();
    // Aligned: stage_blocks writes 16-bit words, and IQ1_M's blocks (bytes only) would not be.
    alignas(4) __shared__ typename D::WB ws[kDpN][KB];
    alignas(4) __shared__ typename D::AB as[kDpM][KB];
    const int tid = threadIdx.x, tn = tid % kDpN, tm = tid / kDpN;  // rows tm, tm + 8, ...
    constexpr int kDpRowStep = kDpThreads / kDpN;
    __shared__ const uint8_t* wp[kDpN];  // the rows' addresses, asked of the map once
    __shared__ const uint8_t* ap[kDpM];
    if (tid < kDpN) wp[tid] = map.w_row(tid);
    if (tid < kDpM) ap[tid] = map.a_row(tid);
    __syncthreads();
    float sum[kDpR], msum[kDpR];
    for (int r = 0; r < kDpR; ++r) sum[r] = msum[r] = 0;
    for (int64_t b0 = 0; b0 < nb; b0 += KB) {
        const int kb = int(nb - b0 < KB ? nb - b0 : KB);
        stage_blocks(ws, [&](int r) { return wp[r]; }, b0, kb, tid, kDpThreads);
        stage_blocks(as, [&](int m) { return ap[m]; }, b0, kb, tid, kDpThreads);
        __syncthreads();
        for (int j = 0; j < kb; ++j)
            for (int r = 0; r < kDpR; ++r) {
                const auto& y = as[tm + r * kDpRowStep][j];
                D::step(ws[tn][j], y, cudaq::isum<W>(ws[tn][j], y), sum[r], msum[r]);
            }
        __syncthreads();
    }
    for (int r = 0; r < kDpR; ++r) {
        const int m = tm + r * kDpRowStep;
        if (wp[tn] && ap[m]) *map.out(tn, m) = cudaq::finish<W>(sum[r], msum[r]);
    }
}

// Tiled on the tensor cores: a tile of kMmaN weight rows x kMmaM activation rows per thread
// block of kMmaWarps warps; warp w takes weight rows 16w..16w+15 (the mma's A: 16 rows) and
// all kMmaM activation rows (kMmaM / 8 mma tiles of 8 columns). For each sub-block of kSub
// elements (16 or 32: one m16n8k16 or m16n8k32 per column tile) the warp gets the exact
// byte dot products of its 16 x kMmaM row pairs, and each lane adds its four per tile times
// its weight rows' sub-block scales: the block's isum, then the block's step of the float
// chain in block order. Staging as in the __dp4a tile.
constexpr int kMmaWarps = 4, kMmaN = 16 * kMmaWarps, kMmaM = 32, kMmaCT = kMmaM / 8;

template <DType W, class Map> __device__ inline void mma_tile(const Map& map, int64_t nb) {
    using D = cudaq::WDot<W>;
    constexpr int KB = tile_kb<W>(), S = D::kSub, NS = cudaq::kBlockElems<W> / S;
    alignas(4) __shared__ typename D::WB ws[kMmaN][KB];  // aligned as in dp4a_tile
    alignas(4) __shared__ typename D::AB as[kMmaM][KB];
    const int tid = threadIdx.x, lane = tid % 32, g = lane / 4, t = lane % 4;
    const int rw[2] = {(tid / 32) * 16 + g, (tid / 32) * 16 + g + 8};  // this lane's weight rows in the tile
    // Output o = 4c + q: weight row rw[q / 2], activation row 8c + 2t + q % 2 (the mma's d[q]).
    __shared__ const uint8_t* wp[kMmaN];  // the rows' addresses, asked of the map once
    __shared__ const uint8_t* ap[kMmaM];
    if (tid < kMmaN) wp[tid] = map.w_row(tid);
    if (tid < kMmaM) ap[tid] = map.a_row(tid);
    __syncthreads();
    float sum[4 * kMmaCT], msum[4 * kMmaCT];
LS_UNROLL
    for (int o = 0; o < 4 * kMmaCT; ++o) sum[o] = msum[o] = 0;
    for (int64_t b0 = 0; b0 < nb; b0 += KB) {
        const int kb = int(nb - b0 < KB ? nb - b0 : KB);
        stage_blocks(ws, [&](int r) { return wp[r]; }, b0, kb, tid, 32 * kMmaWarps);
        stage_blocks(as, [&](int m) { return ap[m]; }, b0, kb, tid, 32 * kMmaWarps);
        __syncthreads();
        for (int j = 0; j < kb; ++j) {
            int acc[4 * kMmaCT];
LS_UNROLL
            for (int o = 0; o < 4 * kMmaCT; ++o) acc[o] = 0;
            for (int s = 0; s < NS; ++s) {  // rolled: unrolled, the kernels took 160-168 registers
                uint32_t a[S / 8];
LS_UNROLL
                for (int r = 0; r < S / 16; ++r) {
                    a[2 * r] = D::value4(ws[rw[0]][j], s * S + 16 * r + 4 * t);
                    a[2 * r + 1] = D::value4(ws[rw[1]][j], s * S + 16 * r + 4 * t);
                }
                const int sc[2] = {D::sub_scale(ws[rw[0]][j], s), D::sub_scale(ws[rw[1]][j], s)};
LS_UNROLL
                for (int c = 0; c < kMmaCT; ++c) {
                    const auto& y = as[8 * c + g][j];
                    uint32_t b[S / 16];
LS_UNROLL
                    for (int r = 0; r < S / 16; ++r) b[r] = cudaq::ld4(y.qs + s * S + 16 * r + 4 * t);
                    int d[4] = {0, 0, 0, 0};
                    mma_s8<S>(d, a, b);
LS_UNROLL
                    for (int q = 0; q < 4; ++q) acc[4 * c + q] += sc[q / 2] * d[q];
                }
            }
LS_UNROLL
            for (int c = 0; c < kMmaCT; ++c)
LS_UNROLL
                for (int q = 0; q < 4; ++q) {
                    const auto& x = ws[rw[q / 2]][j];
                    const auto& y = as[8 * c + 2 * t + q % 2][j];
                    cudaq::Isum is;
                    is.i = acc[4 * c + q];
                    if constexpr (D::has_min) is.m = cudaq::min_isum<W>(x, y);
                    D::step(x, y, is, sum[4 * c + q], msum[4 * c + q]);
                }
        }
        __syncthreads();
    }
LS_UNROLL
    for (int c = 0; c < kMmaCT; ++c)
LS_UNROLL
        for (int q = 0; q < 4; ++q) {
            const int r = rw[q / 2], m = 8 * c + 2 * t + q % 2;
            if (wp[r] && ap[m]) *map.out(r, m) = cudaq::finish<W>(sum[4 * c + q], msum[4 * c + q]);
        }
}

// mul_mat's tiles: weight rows n0 + r of w, activation rows m0 + m of act (rows of
// act_row_bytes), outputs at row_offset(sd, m0 + m) + 4 (n0 + r); (n0, m0) from the block.
struct PlainRows {
    const uint8_t* w;
    int64_t w_nb1, N;
    const uint8_t* act;
    int64_t act_row_bytes, n_mrows;
    uint8_t* dst;
    Shape sd;
};
struct PlainMap {
    const PlainRows& p;
    int64_t n0, m0;
    __device__ const uint8_t* w_row(int r) const { return n0 + r < p.N ? p.w + (n0 + r) * p.w_nb1 : nullptr; }
    __device__ const uint8_t* a_row(int m) const { return m0 + m < p.n_mrows ? p.act + (m0 + m) * p.act_row_bytes : nullptr; }
    __device__ float* out(int r, int m) const { return reinterpret_cast<float*>(p.dst + row_offset(p.sd, m0 + m) + (n0 + r) * 4); }
};

template <DType W> __global__ void __launch_bounds__(kDpThreads) dot_q_tiled_kernel(PlainRows p, int64_t nb) {
    dp4a_tile<W>(PlainMap{p, int64_t(blockIdx.x) * kDpN, int64_t(blockIdx.y) * kDpM}, nb);
}
template <DType W> __global__ void __launch_bounds__(32 * kMmaWarps) dot_q_mma_kernel(PlainRows p, int64_t nb) {
    mma_tile<W>(PlainMap{p, int64_t(blockIdx.x) * kMmaN, int64_t(blockIdx.y) * kMmaM}, nb);
}

}  // namespace ls::cuda
