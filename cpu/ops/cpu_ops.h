// The CPU kernels, one file per op under cpu/ops/, named as in core/ir/op_list.h.
#pragma once
#include "core/ir/tensor.h"

namespace ls::cpu {

#define LS_X(E, n, P) void n(const Tensor& dst);
LS_OP_LIST(LS_X)
#undef LS_X

}  // namespace ls::cpu
