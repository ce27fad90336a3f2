#include "core/ir/op_params.h"
#include "core/ref/ref_ops.h"

namespace ls::ref {

// Rotates pairs of each head's first n_dims values by the angle whose cos and sin the table
// holds (ops::rope_table, the one rule of core/rules/rope_rule.h). NORMAL pairs adjacent
// values (2i, 2i+1); NEOX pairs the two halves (i, i + n_dims/2).
void rope(const Tensor& dst) {
    const Tensor& x = *dst.src[0];
    const float* cs = dst.src[1]->data_as<const float>();
    const RopeParams p = dst.get_params<RopeParams>();
    const int64_t half = p.n_dims / 2;
    for (int64_t t = 0; t < x.ne[2]; ++t)
        for (int64_t h = 0; h < x.ne[1]; ++h) {
            const float* px = reinterpret_cast<const float*>(x.row(h, t));
            float* py = reinterpret_cast<float*>(dst.row(h, t));
            for (int64_t i = p.n_dims; i < x.ne[0]; ++i) py[i] = px[i];
            for (int64_t i = 0; i < half; ++i) {
                const float c = cs[2 * (t * half + i)], s = cs[2 * (t * half + i) + 1];
                const int64_t i0 = p.mode == ROPE_NEOX ? i : 2 * i;
                const int64_t i1 = p.mode == ROPE_NEOX ? i + half : 2 * i + 1;
                const float a = px[i0], b = px[i1];
                py[i0] = a * c - b * s;
                py[i1] = a * s + b * c;
            }
        }
}

}  // namespace ls::ref
