// The grid i-quants' codebooks as host C++ tables, built at compile time from the one
// definition in core/quant/iq_grid_words.h (32-bit words that CUDA and GLSL read as they are):
// 8-value grids joined into one uint64 per entry (element j in byte j), 4-value grids one
// uint32 per entry, the sign table as bytes.
#pragma once
#include <array>
#include <cstddef>
#include <cstdint>

#include "core/quant/iq_grid_words.h"

namespace ls::qb {

namespace iq_grid_detail {
inline constexpr uint32_t kIQ2XXS[] = {LS_IQ2XXS_GRID_WORDS};
inline constexpr uint32_t kIQ2XS[] = {LS_IQ2XS_GRID_WORDS};
inline constexpr uint32_t kIQ2S[] = {LS_IQ2S_GRID_WORDS};
inline constexpr uint32_t kIQ1S[] = {LS_IQ1S_GRID_WORDS};
inline constexpr uint32_t kSigns[] = {LS_IQ_SIGNS_WORDS};

template <size_t N>
constexpr std::array<uint64_t, N / 2> join64(const uint32_t (&w)[N]) {
    std::array<uint64_t, N / 2> out{};
    for (size_t i = 0; i < N / 2; ++i) out[i] = uint64_t(w[2 * i]) | uint64_t(w[2 * i + 1]) << 32;
    return out;
}
template <size_t N>
constexpr std::array<uint8_t, 4 * N> bytes(const uint32_t (&w)[N]) {
    std::array<uint8_t, 4 * N> out{};
    for (size_t i = 0; i < 4 * N; ++i) out[i] = static_cast<uint8_t>(w[i / 4] >> (8 * (i % 4)));
    return out;
}
}  // namespace iq_grid_detail

inline constexpr std::array<uint64_t, 256> kIQ2XXSGrid = iq_grid_detail::join64(iq_grid_detail::kIQ2XXS);
inline constexpr std::array<uint64_t, 512> kIQ2XSGrid = iq_grid_detail::join64(iq_grid_detail::kIQ2XS);
inline constexpr std::array<uint64_t, 1024> kIQ2SGrid = iq_grid_detail::join64(iq_grid_detail::kIQ2S);
inline constexpr uint32_t kIQ3XXSGrid[256] = {LS_IQ3XXS_GRID_WORDS};
inline constexpr uint32_t kIQ3SGrid[512] = {LS_IQ3S_GRID_WORDS};
inline constexpr std::array<uint64_t, 2048> kIQ1SGrid = iq_grid_detail::join64(iq_grid_detail::kIQ1S);
inline constexpr std::array<uint8_t, 128> kIQSigns = iq_grid_detail::bytes(iq_grid_detail::kSigns);

}  // namespace ls::qb
