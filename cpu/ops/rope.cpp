#include <tbb/parallel_for.h>

#include <vector>

#include "core/ir/op_params.h"
#include "cpu/ops/cpu_ops.h"

namespace ls::cpu {

// The rotation of ref::rope with the graph's cos/sin table (ops::rope_table), tokens spread
// over the threads.
void rope(const Tensor& dst) {
    const Tensor& x = *dst.src[0];
    const float* table = dst.src[1]->data_as<const float>();
    const RopeParams p = dst.get_params<RopeParams>();
    const int64_t half = p.n_dims / 2;
    tbb::parallel_for(int64_t(0), x.ne[2], [&](int64_t t) {
        // The token's cos and sin as two arrays: read as (cos, sin) pairs next to (a, b) pairs,
        // the loop below is a complex multiplication, which GCC turns into vfmaddsub even
        // under -ffp-contract=off (check_no_fma.sh found it).
        std::vector<float> cs(static_cast<size_t>(half)), sn(cs.size());
        for (int64_t i = 0; i < half; ++i) cs[size_t(i)] = table[2 * (t * half + i)], sn[size_t(i)] = table[2 * (t * half + i) + 1];
        for (int64_t h = 0; h < x.ne[1]; ++h) {
            const float* px = reinterpret_cast<const float*>(x.row(h, t));
            float* py = reinterpret_cast<float*>(dst.row(h, t));
            for (int64_t i = p.n_dims; i < x.ne[0]; ++i) py[i] = px[i];
            for (int64_t i = 0; i < half; ++i) {
                const int64_t i0 = p.mode == ROPE_NEOX ? i : 2 * i;
                const int64_t i1 = p.mode == ROPE_NEOX ? i + half : 2 * i + 1;
                const float a = px[i0], b = px[i1], c = cs[size_t(i)], s = sn[size_t(i)];
                py[i0] = a * c - b * s;
                py[i1] = a * s + b * c;
            }
        }
    });
}

}  // namespace ls::cpu
