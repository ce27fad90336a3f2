#include "core/models/ffn_block.h"

#include "core/ir/ops.h"

namespace ls {

Tensor* gated_act(Graph& g, Tensor* h, Tensor* gate, Tensor* up, GatedAct act) {
    using namespace ops;
    Tensor* a = mul_mat(g, gate, h);
    return mul(g, act == GatedAct::Silu ? silu(g, a) : gelu(g, a), mul_mat(g, up, h));
}

Tensor* gated_ffn(Graph& g, Tensor* h, Tensor* gate, Tensor* up, Tensor* down, GatedAct act) {
    return ops::mul_mat(g, down, gated_act(g, h, gate, up, act));
}

}  // namespace ls
