#include <type_traits>

#include "core/ir/op_params.h"
#include "cpu/ops/cpu_ops.h"
#include "cpu/ops/unary.h"

namespace ls::cpu {
// The reference's two comparisons and selects (a NaN fails both and passes through); the
// batch form selects with the same ordered comparisons lane by lane.
void clamp(const Tensor& dst) {
    const ClampParams p = dst.get_params<ClampParams>();
    unary_map(dst, [p](auto x) {
        if constexpr (std::is_same_v<decltype(x), float>) {
            return x < p.min ? p.min : (x > p.max ? p.max : x);
        } else {
            const simd::fbatch lo(p.min), hi(p.max);
            return xsimd::select(x < lo, lo, xsimd::select(x > hi, hi, x));
        }
    });
}
}  // namespace ls::cpu
