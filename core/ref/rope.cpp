#include <vector>

#include "core/ir/op_params.h"
#include "core/ref/ref_ops.h"
#include "core/rules/rope_rule.h"

namespace ls::ref {

// Rotates pairs of each head's first n_dims values by pos * theta_i. NORMAL pairs adjacent
// values (2i, 2i+1); NEOX pairs the two halves (i, i + n_dims/2).
void rope(const Tensor& dst) {
    const Tensor& x = *dst.src[0];
    const int32_t* pos = dst.src[1]->data_as<const int32_t>();
    const float* ff = dst.src[2] ? dst.src[2]->data_as<const float>() : nullptr;
    const RopeParams p = dst.get_params<RopeParams>();
    const int64_t half = p.n_dims / 2;
    // cos, sin of every (position, pair): the one rule of core/rules/rope_rule.h.
    std::vector<float> cs(size_t(x.ne[2] * half)), sn(cs.size());
    rope_angles(pos, x.ne[2], p, ff, [&](int64_t t, int64_t i, float c, float s) {
        cs[size_t(t * half + i)] = c;
        sn[size_t(t * half + i)] = s;
    });
    for (int64_t t = 0; t < x.ne[2]; ++t)
        for (int64_t h = 0; h < x.ne[1]; ++h) {
            const float* px = reinterpret_cast<const float*>(x.row(h, t));
            float* py = reinterpret_cast<float*>(dst.row(h, t));
            for (int64_t i = p.n_dims; i < x.ne[0]; ++i) py[i] = px[i];
            for (int64_t i = 0; i < half; ++i) {
                const float c = cs[size_t(t * half + i)], s = sn[size_t(t * half + i)];
                const int64_t i0 = p.mode == ROPE_NEOX ? i : 2 * i;
                const int64_t i1 = p.mode == ROPE_NEOX ? i + half : 2 * i + 1;
                const float a = px[i0], b = px[i1];
                py[i0] = a * c - b * s;
                py[i1] = a * s + b * c;
            }
        }
}

}  // namespace ls::ref
