// Warp-wide integer matrix multiply-accumulate on tensor cores (mma.sync, sm_80 and later):
// D += A * B for a 16 x 8 tile of signed bytes with 32-bit sums, exact (the sums of our
// blocks never come near 2^31). Under the host emulator (LS_CUDA_EMU) the same fragments
// are gathered across the warp and multiplied in plain C++, so the emulated kernels check
// that every lane loads the elements the PTX ISA's fragment layout assigns to it.
//
// Fragments (PTX ISA, "Matrix Fragments for mma.m16n8k16 / m16n8k32", integer types), with
// lane = 4 * g + t, four bytes per register, the lowest byte the lowest k:
//   a[2r]     A row g,     k = 16r + 4t .. 16r + 4t + 3
//   a[2r + 1] A row g + 8, the same k              (r = 0 for k16; 0, 1 for k32)
//   b[r]      B column g,  k = 16r + 4t .. 16r + 4t + 3
//   d[0], d[1]: D row g, columns 2t, 2t + 1; d[2], d[3]: row g + 8, the same columns.
#pragma once
#include <cstdint>

namespace ls::cuda {

#if defined(LS_CUDA_EMU)
template <int K> inline void mma_s8(int (&d)[4], const uint32_t (&a)[K / 8], const uint32_t (&b)[K / 16]) {
    struct Frag {
        uint32_t a[K / 8], b[K / 16];
    } mine, all[32];
    for (int i = 0; i < K / 8; ++i) mine.a[i] = a[i];
    for (int i = 0; i < K / 16; ++i) mine.b[i] = b[i];
    emu::warp_gather(&mine, sizeof(Frag), all);
    int A[16][K], B[K][8];
    const auto byte = [](uint32_t v, int i) { return int(int8_t(uint8_t(v >> (8 * i)))); };
    for (int l = 0; l < 32; ++l) {
        const int g = l / 4, t = l % 4;
        for (int r = 0; r < K / 16; ++r)
            for (int i = 0; i < 4; ++i) {
                const int k = 16 * r + 4 * t + i;
                A[g][k] = byte(all[l].a[2 * r], i);
                A[g + 8][k] = byte(all[l].a[2 * r + 1], i);
                B[k][g] = byte(all[l].b[r], i);
            }
    }
    const int g = int(emu::lane_id()) / 4, t = int(emu::lane_id()) % 4;
    for (int k = 0; k < K; ++k) {
        d[0] += A[g][k] * B[k][2 * t];
        d[1] += A[g][k] * B[k][2 * t + 1];
        d[2] += A[g + 8][k] * B[k][2 * t];
        d[3] += A[g + 8][k] * B[k][2 * t + 1];
    }
}
#else
template <int K> __device__ inline void mma_s8(int (&d)[4], const uint32_t (&a)[K / 8], const uint32_t (&b)[K / 16]) {
    static_assert(K == 16 || K == 32, "m16n8k16 or m16n8k32");
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    if constexpr (K == 16)
        asm volatile("mma.sync.aligned.m16n8k16.row.col.s32.s8.s8.s32 {%0, %1, %2, %3}, {%4, %5}, {%6}, {%0, %1, %2, %3};"
                     : "+r"(d[0]), "+r"(d[1]), "+r"(d[2]), "+r"(d[3])
                     : "r"(a[0]), "r"(a[1]), "r"(b[0]));
    else
        asm volatile(
            "mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};"
            : "+r"(d[0]), "+r"(d[1]), "+r"(d[2]), "+r"(d[3])
            : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
#else
    __trap();  // the host launches the tensor-core kernels only on sm_80 and later
#endif
}
#endif

}  // namespace ls::cuda
