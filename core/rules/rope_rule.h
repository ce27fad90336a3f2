// The rope angle, the one definition every backend's cos/sin tables come from:
//   theta(pos, i) = pos * freq_scale * freq_base^(-2i / n_dims) / freq_factor[i]
// and with YaRN (ext_factor != 0) the blend of that angle with the unscaled one,
//   theta = theta_scaled * (1 - mix_i) + theta_unscaled * mix_i,
//   mix_i = ext_factor * (1 - clamp((i - corr_lo) / max(0.001, corr_hi - corr_lo), 0, 1)),
// in double (pow, cos and sin of the host's libm), each cos and sin times attn_factor rounded
// once to float. The table is made on the host by core, once per ubatch and setting, as a graph
// input (ops::rope_table) that every backend's rope reads: a device's own double libm need not
// round as the host's.
#pragma once
#include <algorithm>
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

// cos and sin of pair i's angle at position pos; inv_freq = rope_inv_freq(...)[i]. P is the
// op's RopeParams (core/ir/op_params.h; a template, as rules depend on nothing).
template <class P>
void rope_cos_sin(int32_t pos, const P& p, double inv_freq, const float* freq_factors, int64_t i, float& c,
                         float& s) {
    double theta = double(pos) * p.freq_scale * inv_freq;
    if (freq_factors) theta /= freq_factors[i];
    if (p.ext_factor != 0.f) {
        double extrap = double(pos) * inv_freq;
        if (freq_factors) extrap /= freq_factors[i];
        const double y = (double(i) - p.corr_lo) / std::max(0.001, double(p.corr_hi) - p.corr_lo);
        const double mix = (1.0 - std::clamp(y, 0.0, 1.0)) * p.ext_factor;
        theta = theta * (1.0 - mix) + extrap * mix;
    }
    c = float(std::cos(theta) * p.attn_factor);
    s = float(std::sin(theta) * p.attn_factor);
}

// Calls out(t, i, cos, sin) for every position t in [0, T) and pair i in [0, n_dims/2).
// freq_factors: n_dims/2 divisors of the angle, or null.
template <class P, class Out>
void rope_angles(const int32_t* pos, int64_t T, const P& p, const float* freq_factors, Out&& out) {
    const std::vector<double> inv_freq = rope_inv_freq(p.freq_base, p.n_dims);
    for (int64_t t = 0; t < T; ++t)
        for (int64_t i = 0; i < p.n_dims / 2; ++i) {
            float c, s;
            rope_cos_sin(pos[t], p, inv_freq[size_t(i)], freq_factors, i, c, s);
            out(t, i, c, s);
        }
}

// Multi-axis rope (Qwen2-VL's M-RoPE and Qwen3-VL's interleaved form; the 2D rope of vision
// towers): pair i of token t turns by the position on axis axis[i], pos[t * n_axes + axis[i]],
// times inv_freq[i] (given per pair: a vision tower's axes each restart the series). Calls
// out(t, i, cos, sin) as rope_angles does.
template <class P, class Out>
void rope_angles_axes(const int32_t* pos, int64_t n_axes, int64_t T, const P& p, const int32_t* axis, const double* inv_freq,
                      Out&& out) {
    for (int64_t t = 0; t < T; ++t)
        for (int64_t i = 0; i < p.n_dims / 2; ++i) {
            float c, s;
            rope_cos_sin(pos[t * n_axes + axis[i]], p, inv_freq[i], nullptr, i, c, s);
            out(t, i, c, s);
        }
}

// The axis of each of n_pairs pairs in Qwen3-VL / Qwen3.5's interleaved M-RoPE with sections
// (t, h, w) (HF's mrope_section, llama.cpp's rope.dimension_sections): pair i is the height's
// if i % 3 == 1 and i < 3 h, the width's if i % 3 == 2 and i < 3 w, else the time's.
inline std::vector<int32_t> mrope_interleaved_axes(int32_t n_pairs, int32_t sec_h, int32_t sec_w) {
    std::vector<int32_t> a(size_t(n_pairs), 0);
    for (int32_t i = 0; i < n_pairs; ++i) {
        if (i % 3 == 1 && i < 3 * sec_h) a[size_t(i)] = 1;
        if (i % 3 == 2 && i < 3 * sec_w) a[size_t(i)] = 2;
    }
    return a;
}

// YaRN's correction range (corr_lo, corr_hi) for a context of n_ctx_orig tokens: the pairs
// whose wavelength spans beta_fast and beta_slow rotations over it. truncate rounds the range
// outward to whole pairs, as llama.cpp always does and transformers does unless the model's
// config says `truncate: false` (gpt-oss).
inline void rope_yarn_corr_dims(int32_t n_dims, int32_t n_ctx_orig, float freq_base, float beta_fast, float beta_slow,
                                bool truncate, float& lo, float& hi) {
    const double pi = 3.14159265358979323846;
    auto dim = [&](double n_rot) { return n_dims * std::log(n_ctx_orig / (n_rot * 2 * pi)) / (2 * std::log(double(freq_base))); };
    double a = dim(beta_fast), b = dim(beta_slow);
    if (truncate) a = std::floor(a), b = std::ceil(b);
    lo = float(std::max(0.0, a));
    hi = float(std::min(double(n_dims - 1), b));
}

}  // namespace ls
