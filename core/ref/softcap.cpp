#include "core/rules/canon.h"
#include "core/ir/op_params.h"
#include "core/ref/ref_ops.h"
#include "core/ref/unary.h"

namespace ls::ref {
// The same expression as the attention op's score cap (core/ref/attention.cpp).
void softcap(const Tensor& dst) {
    const float c = dst.get_params<SoftcapParams>().cap;
    unary_map(dst, [c](float x) { return c * det_tanh(x / c); });
}
}  // namespace ls::ref
