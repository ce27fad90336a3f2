// The 32-element block types with one scale (Q4_0, Q5_0, Q8_0, IQ4_NL, MXFP4) decoded for the
// tiles, one block of a row to 32 bytes. Include only where LS_GEMM_AVX2 is set.
#pragma once
#include <cstring>

#include "core/quant/block_access.h"
#include "core/quant/quant_blocks.h"
#include "cpu/avx2_unpack.h"
#include "cpu/gemm/isa.h"
#include "cpu/gemm/vec256.h"

namespace ls::cpu::gemm {

// Legacy decoders: u = unsigned value with x = u - kOff (kOff 0: signed, sign trick).
// scale_bits: the block scale as float bits where it is not an f16 field d (MXFP4's E8M0).
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

// The lookup-table types: the 16 int8 levels (block_access.h) in a byte shuffle, indexed by
// the block's nibbles; with VNNI the levels biased by 128 (unsigned, as dpbusd wants), like Q8_0.
template <uint64_t Lo, uint64_t Hi>
inline __m256i lut_levels(const uint8_t* qs) {
    constexpr uint64_t kBias = LS_GEMM_VNNI ? 0x8080808080808080ull : 0;
    const __m256i tbl = _mm256_broadcastsi128_si256(_mm_set_epi64x(static_cast<long long>(Hi ^ kBias), static_cast<long long>(Lo ^ kBias)));
    return _mm256_shuffle_epi8(tbl, nibbles16(qs));
}
struct LIQ4_NL {
    using Block = qb::BlockIQ4_NL;
    static constexpr int kOff = LS_GEMM_VNNI ? 128 : 0;
    static __m256i dec(const Block& b) { return lut_levels<qb::kIQ4NLLo, qb::kIQ4NLHi>(b.qs); }
};
struct LMXFP4 {
    using Block = qb::BlockMXFP4;
    static constexpr int kOff = LS_GEMM_VNNI ? 128 : 0;
    static __m256i dec(const Block& b) { return lut_levels<qb::kMXFP4Lo, qb::kMXFP4Hi>(b.qs); }
    static uint32_t scale_bits(const Block& b) { return qb::mxfp4_scale_bits(b.e); }
};

// The 8 (or 16) rows' block scales as floats: f16 fields converted, or the decoder's bits.
template <class D>
constexpr bool kScaleBits = requires(const typename D::Block& b) { D::scale_bits(b); };
template <class D, int N>
struct BlockScales {
    alignas(64) uint32_t v[N];  // f16 bits in the low half, or float bits
    void set(int r, const typename D::Block& b) {
        if constexpr (kScaleBits<D>) {
            v[r] = D::scale_bits(b);
        } else {
            uint16_t h;
            std::memcpy(&h, &b.d, 2);
            v[r] = h;
        }
    }
    __m256 get8(int r0 = 0) const {
        const __m256i x = _mm256_load_si256(reinterpret_cast<const __m256i*>(v + r0));
        if constexpr (kScaleBits<D>) return _mm256_castsi256_ps(x);
        return _mm256_cvtph_ps(_mm_packus_epi32(_mm256_castsi256_si128(x), _mm256_extracti128_si256(x, 1)));
    }
};

}  // namespace ls::cpu::gemm
