// The rope angle, the one definition every backend's cos/sin tables come from:
//   theta(pos, i) = pos * freq_scale * freq_base^(-2i / n_dims) / freq_factor[i]
// in double (pow, cos and sin of the host's libm), each cos and sin rounded once to float.
// The tables are made on the host by every backend (core/ref/rope.cpp per row, cpu/ops/rope.cpp,
// the CUDA and Vulkan rope launchers): a device's own double libm need not round as the host's.
#pragma once
#include <cmath>
#include <cstdint>
#include <vector>

namespace ls {

// freq_base^(-2i / n_dims) for i in [0, n_dims/2): the part of the angle that does not depend
// on the position (computed once per table).
inline std::vector<double> rope_inv_freq(float freq_base, int32_t n_dims) {
    std::vector<double> v(size_t(n_dims / 2));
    for (int64_t i = 0; i < n_dims / 2; ++i) v[size_t(i)] = std::pow(double(freq_base), -2.0 * i / n_dims);
    return v;
}

// cos and sin of pair i's angle at position pos; inv_freq = rope_inv_freq(...)[i].
inline void rope_cos_sin(int32_t pos, float freq_scale, double inv_freq, const float* freq_factors, int64_t i, float& c,
                         float& s) {
    double theta = double(pos) * freq_scale * inv_freq;
    if (freq_factors) theta /= freq_factors[i];
    c = float(std::cos(theta));
    s = float(std::sin(theta));
}

// Calls out(t, i, cos, sin) for every position t in [0, T) and pair i in [0, n_dims/2).
// freq_factors: n_dims/2 divisors of the angle, or null.
template <class Out>
void rope_angles(const int32_t* pos, int64_t T, float freq_base, float freq_scale, int32_t n_dims, const float* freq_factors,
                 Out&& out) {
    const std::vector<double> inv_freq = rope_inv_freq(freq_base, n_dims);
    for (int64_t t = 0; t < T; ++t)
        for (int64_t i = 0; i < n_dims / 2; ++i) {
            float c, s;
            rope_cos_sin(pos[t], freq_scale, inv_freq[size_t(i)], freq_factors, i, c, s);
            out(t, i, c, s);
        }
}

}  // namespace ls
