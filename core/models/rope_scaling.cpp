#include "core/models/rope_scaling.h"

#include <cmath>
#include <stdexcept>

#include "core/models/arch_keys.h"
#include "core/rules/rope_rule.h"

namespace ls {

RopeParams rope_params_from_gguf(const ArchKeys& keys, int32_t n_dims, int32_t mode, float freq_base,
                                 const RopeScalingOptions& opt) {
    RopeParams p{n_dims, mode, freq_base, 1.0f};
    const std::string type = keys.get_string(ArchKey::RopeScalingType, "none");
    // Older files give only the linear factor, under rope.scale_linear.
    const double factor = keys.get_float(ArchKey::RopeScalingFactor, keys.get_float(ArchKey::RopeScaleLinear, 1.0));
    if (!std::isfinite(factor) || factor <= 0)
        throw std::runtime_error("rope scaling factor " + std::to_string(factor) + " is not a positive number (broken metadata)");
    const double attn_factor = keys.get_float(ArchKey::RopeScalingAttnFactor, 1.0);
    if (type == "none") return p;
    if (type == "linear") {
        p.freq_scale = float(1.0 / factor);
        return p;
    }
    if (type != "yarn")
        throw std::runtime_error("rope scaling type '" + type + "' is not supported (supported: none, linear, yarn)");
    const int64_t n_orig = keys.get_int(ArchKey::RopeScalingOrigCtx, 0);
    if (n_orig <= 0 || n_orig > (int64_t(1) << 30))
        throw std::runtime_error("yarn rope scaling needs " + keys.name(ArchKey::RopeScalingOrigCtx) + " (broken metadata)");
    p.freq_scale = float(1.0 / factor);
    p.ext_factor = float(keys.get_float(ArchKey::RopeYarnExtFactor, 1.0));
    // The magnitude transformers applies to cos and sin (its attention_factor): 1 + 0.1 ln(factor)
    // for factors above 1; with yarn_log_multiplier (mscale_all_dim, Ministral 3's), the ratio
    // get_mscale(factor, mscale) / get_mscale(factor, mscale_all_dim), mscale taken as 1 as
    // llama.cpp's converter and loader take it.
    auto get_mscale = [&](double m) { return factor <= 1 ? 1.0 : 1.0 + 0.1 * m * std::log(factor); };
    const double log_mul = keys.get_float(ArchKey::RopeYarnLogMul, 0.0);
    if (!std::isfinite(log_mul) || log_mul < 0) throw std::runtime_error("rope.scaling.yarn_log_multiplier must be a finite number >= 0 (broken metadata)");
    const double mscale = log_mul != 0.0 ? get_mscale(1.0) / get_mscale(log_mul) : get_mscale(1.0);
    p.attn_factor = float(mscale * attn_factor);
    const double beta_fast = keys.get_float(ArchKey::RopeYarnBetaFast, 32.0);
    const double beta_slow = keys.get_float(ArchKey::RopeYarnBetaSlow, 1.0);
    if (!(beta_fast > 0) || !(beta_slow > 0) || !std::isfinite(beta_fast) || !std::isfinite(beta_slow))
        throw std::runtime_error("yarn beta_fast / beta_slow must be positive (broken metadata)");
    rope_yarn_corr_dims(n_dims, int32_t(n_orig), freq_base, float(beta_fast), float(beta_slow), opt.yarn_truncate, p.corr_lo,
                        p.corr_hi);
    return p;
}

std::vector<int32_t> mrope_axes_from_gguf(const GgufFile& f, const std::string& arch, int64_t n_rot) {
    const std::string key = arch + ".rope.dimension_sections";
    if (!f.find(key)) return {};
    const std::vector<int64_t> sec = f.get_int_array(key);
    constexpr int64_t kMax = int64_t(1) << 30;
    int64_t sum = 0;
    for (int64_t v : sec) sum += v < 0 || v > kMax ? kMax : v;  // a hostile value never sums to n_rot / 2
    if (sec.size() < 3 || sum != n_rot / 2)
        throw std::runtime_error(arch + ": rope.dimension_sections must hold the rope's " + std::to_string(n_rot / 2) +
                                 " pairs (time, height, width)");
    return mrope_interleaved_axes(int32_t(n_rot / 2), int32_t(sec[1]), int32_t(sec[2]));
}

}  // namespace ls
