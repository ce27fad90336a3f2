// The CPU kernels, one file per op under cpu/ops/, named as in core/op_list.h.
#pragma once
#include "core/tensor.h"

namespace ls::cpu {

#define LS_X(E, n) void n(const Tensor& dst);
LS_OP_LIST(LS_X)
#undef LS_X

}  // namespace ls::cpu
