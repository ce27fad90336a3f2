// Groups of a graph's nodes that the Vulkan backend records as one dispatch (fused.cpp): on a
// GPU each dispatch of a decode step, and each barrier between dependent ones, costs a few
// microseconds whatever the shader does (the default model's step: 473 dispatches, 364
// barriers). LOCKSTEP_VK_FUSE=0 records every node on its own.
#pragma once
#include <cstddef>
#include <vector>

#include "backends/vulkan/recorder.h"

namespace ls::vk {

// Records nodes[i..] as one fused dispatch where a group fits, and returns how many nodes it
// took (0: none; nodes[i] is recorded alone):
//  - a layer's per-head rows (core/ir/head_rows_group.h): a chain of rms_norm, rope and the
//    cache write as one dispatch each (shaders/head_rows.comp), the chains without barriers;
//  - [rms_norm, add,] rms_norm [and the quantizer of the mul_mat that reads it]
//    (shaders/norm_chain.comp);
//  - gelu or silu, mul [and the next mul_mat's quantizer] (shaders/glu.comp);
//  - a split attention's fold and the quantizer of the mul_mat that reads its output
//    (shaders/attention_fold.comp's _q8_* variants).
// A group whose outputs the allocator placed partly over its inputs or each other is not fused.
size_t record_fused(const std::vector<Tensor*>& nodes, size_t i, Recorder& r);

}  // namespace ls::vk
