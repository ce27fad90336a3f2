// The prepared activation row the tiles read (gemm_prepare_act writes it).
#pragma once
#include <cstddef>
#include <cstdint>

#include "core/quant/dtype.h"
#include "core/quant/quant_blocks.h"
#include "cpu/gemm/isa.h"

namespace ls::cpu::gemm {

// The 32-element block types with one scale over Q8_0 activations (legacy_tile8/16).
inline bool is_legacy(DType t) {
    return t == DType::Q4_0 || t == DType::Q5_0 || t == DType::Q8_0 || t == DType::IQ4_NL || t == DType::MXFP4;
}
// Legacy types: after the Q8_0 blocks (from a 4-byte aligned offset), the block scales as
// floats, then per block off * (sum of the block's quants), off = 8 (Q4_0), 16 (Q5_0), and for
// the signed ones (Q8_0, IQ4_NL, MXFP4) 0, or 128 with VNNI (their weights are then taken as
// unsigned x + 128, as dpbusd wants).
inline int legacy_off(DType t) { return t == DType::Q4_0 ? 8 : t == DType::Q5_0 ? 16 : LS_GEMM_VNNI ? 128 : 0; }
inline size_t legacy_extra_off(int64_t k) { return (static_cast<size_t>(k / qb::QK) * sizeof(qb::BlockQ8_0) + 3) / 4 * 4; }

// Q4_1/Q5_1 (over Q8_1): after the Q8_1 blocks, each block's f16 scale d and sum s as floats
// (d[nb], then s[nb]), converted once per row instead of once per weight row group.
inline size_t minblock_extra_off(int64_t k) { return static_cast<size_t>(k / qb::QK) * sizeof(qb::BlockQ8_1); }

}  // namespace ls::cpu::gemm
