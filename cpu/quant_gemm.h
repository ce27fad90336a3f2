// Tiled quantized matrix products: 8 weight rows x a group of tokens per call, each weight
// block unpacked once and reused for every token of the group. Used for every M (one token
// included), so a (weight row, token) value never depends on how many tokens are in the batch:
// each output is one float lane whose operations are, per block i in order,
//     acc = acc + (d_w[i] * d_a[i]) * float(exact integer block sum)   (each operation rounded)
// (Q2_K, Q4_K and Q5_K also keep macc = macc + (dmin_w * d_a) * float(exact min sum), output acc - macc;
// Q4_1 and Q5_1 add acc = acc + m_w * s_a after each block's product),
// whatever the group size or the lane's position.
#pragma once
#include <cstddef>
#include <cstdint>

#include "core/quant/dtype.h"

namespace ls::cpu {

// True if weight type t has a tiled kernel in this build (on AVX2: every quantized weight type
// lockstep runs; float weights take dot_canonical).
bool gemm_supported(DType t);
// Weight rows per gemm_tile call for type t and ntok tokens: 16 for the legacy types with
// more than 8 tokens where the CPU has AVX-512 VNNI, else 8. (gemm_tile takes up to 16 rows
// for any type and count; this is the grouping that runs fastest. Results do not depend on it.)
int gemm_rows(DType t, int64_t ntok);
// Bytes per token of the prepared activation row (quantized to vec_dot_type(t), plus per-block
// integer sums for the legacy types), padded to a cache line.
size_t gemm_act_stride(DType t, int64_t k);
// Prepares one activation row of k floats for weight type t into dst (gemm_act_stride bytes).
void gemm_prepare_act(DType t, const float* x, uint8_t* dst, int64_t k);
// out[g][r] = row (n0 + r) . token g for r < nr (nr <= 16), g < ntok. Weight rows start at w
// (stride wstride bytes); prepared tokens at a (stride astride); out[g] points at column n0
// of token g's output row.
void gemm_tile(DType t, const uint8_t* w, size_t wstride, int nr, const uint8_t* a, size_t astride, int ntok,
               int64_t k, float* const* out);

// One weight row against one activation row prepared by quantize_row_act, for the types
// gemm_tile does not take: the canonical chain of core/ref/mul_mat.cpp (cpu/ops/mul_mat.cpp).
float dot_canonical(DType t, const uint8_t* w, const uint8_t* a, int64_t k);

}  // namespace ls::cpu
