// The Vulkan backend's per-op functions, one file per op under backends/vulkan/ops/, named
// as in core/ir/op_list.h. op_table.cpp takes their addresses from the same rows, so an op
// without its file fails to link.
//  supports_<op>: whether this backend runs the node (types, strides, index operands that
//                 are graph inputs);
//  plan_<op>:     the host pass (aux buffer needs, launch shapes from index data);
//  record_<op>:   push constants and dispatches.
#pragma once
#include "backends/vulkan/recorder.h"
#include "core/ir/op_list.h"

namespace ls::vk {

#define LS_X(E, n, P)                         \
    bool supports_##n(const Tensor& node);    \
    void plan_##n(const Tensor& node, Plan& plan); \
    void record_##n(const Tensor& node, Recorder& rec);
LS_OP_LIST(LS_X)
#undef LS_X

struct OpEntry {
    bool (*supports)(const Tensor&);
    void (*plan)(const Tensor&, Plan&);
    void (*record)(const Tensor&, Recorder&);
};
// The entry of op (not NONE).
const OpEntry& op_entry(OpId op);

// attention in its split form with the fold also quantizing the output for the mul_mat that
// reads it (x: that mul_mat's src[1], the output as [Dv * H, T]) as `at` into the act rows
// (backends/vulkan/fused.cpp); false, with nothing recorded, where the node does not run split.
bool record_attention_act(const Tensor& node, const Tensor* x, DType at, Recorder& rec);

}  // namespace ls::vk
