// The tile entry points, one per weight-type family and row count, instantiated for the
// token-group sizes the dispatch (cpu/quant_gemm.cpp) uses: powers of two up to the maximum.
// Arguments as in cpu/quant_gemm.h's gemm_tile, with wr[r] the start of weight row r (missing
// rows repeat the last), k the row length, and pf the prefetch distance in bytes (0: none).
#pragma once
#include <cstddef>
#include <cstdint>

#include "core/quant/dtype.h"
#include "cpu/gemm/isa.h"

#if LS_GEMM_AVX2
namespace ls::cpu::gemm {

inline constexpr int kMaxGroup8 = 32;   // tokens per call of an 8-row tile, at most
inline constexpr int kMaxGroup16 = 64;  // tokens per call of a 16-row tile, at most
#define LS_GEMM_GROUPS_8(X) X(1) X(2) X(4) X(8) X(16) X(32)
#define LS_GEMM_GROUPS_16(X) X(1) X(2) X(4) X(8) X(16) X(32) X(64)

// Q4_0, Q5_0, Q8_0, IQ4_NL, MXFP4: 8 rows.
template <int G>
void legacy_tile8(DType t, const uint8_t* const* wr, const uint8_t* a, size_t astride, int64_t k, float* const* out, int nr,
                  size_t pf);
// Q4_1, Q5_1 (over Q8_1 activations): 8 rows.
template <int G>
void minblock_tile8(DType t, const uint8_t* const* wr, const uint8_t* a, size_t astride, int64_t k, float* const* out, int nr,
                    size_t pf);
// Q2_K, Q3_K, Q4_K, Q5_K, Q6_K: 8 rows.
template <int G>
void kquant_tile8(DType t, const uint8_t* const* wr, const uint8_t* a, size_t astride, int64_t k, float* const* out, int nr,
                  size_t pf);
// IQ4_XS and the grid i-quants (IQ2_*, IQ3_*, IQ1_*): 8 rows.
template <int G>
void iq_tile8(DType t, const uint8_t* const* wr, const uint8_t* a, size_t astride, int64_t k, float* const* out, int nr, size_t pf);
// TQ1_0, TQ2_0: 8 rows.
template <int G>
void ternary_tile8(DType t, const uint8_t* const* wr, const uint8_t* a, size_t astride, int64_t k, float* const* out, int nr,
                   size_t pf);
#if LS_GEMM_V512
// Q4_0, Q5_0, Q8_0, IQ4_NL, MXFP4: 16 rows (AVX-512 VNNI).
template <int G>
void legacy_tile16(DType t, const uint8_t* const* wr, const uint8_t* a, size_t astride, int64_t k, float* const* out, int nr,
                   size_t pf);
#endif

}  // namespace ls::cpu::gemm
#endif
