// The 32-element block types (Q4_0, Q5_0, Q8_0) decoded for the tiles, one block of a row
// to 32 bytes. Include only where LS_GEMM_AVX2 is set.
#pragma once
#include "core/quant/quant_blocks.h"
#include "cpu/avx2_unpack.h"
#include "cpu/gemm/isa.h"
#include "cpu/gemm/vec256.h"

namespace ls::cpu::gemm {

// Legacy decoders: u = unsigned value with x = u - kOff (kOff 0: signed Q8_0, sign trick).
struct LQ4_0 {
    using Block = qb::BlockQ4_0;
    static constexpr int kOff = 8;
    static __m256i dec(const Block& b) { return nibbles16(b.qs); }
};
struct LQ5_0 {
    using Block = qb::BlockQ5_0;
    static constexpr int kOff = 16;
    static __m256i dec(const Block& b) {
        return _mm256_or_si256(nibbles16(b.qs), _mm256_and_si256(bits_to_bytes(b.qh), _mm256_set1_epi8(0x10)));
    }
};
struct LQ8_0 {
    using Block = qb::BlockQ8_0;
#if LS_GEMM_VNNI
    static constexpr int kOff = 128;  // x + 128 = x with the sign bit flipped
    static __m256i dec(const Block& b) { return _mm256_xor_si256(loadu(b.qs), _mm256_set1_epi8(static_cast<char>(0x80))); }
#else
    static constexpr int kOff = 0;
    static __m256i dec(const Block& b) { return loadu(b.qs); }
#endif
};

}  // namespace ls::cpu::gemm
