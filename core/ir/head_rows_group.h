// A layer's per-head row ops between its q/k/v projections and its attention, as the GPU
// backends fuse them (CUDA: backends/cuda/head_rows.cu; Vulkan: backends/vulkan/fused.cpp):
// chains of rms_norm, rope and set_rows over the same rows (q: norm, rope; k: norm, rope,
// cache write; v: cache write), interleaved in the order the models build them. One matcher
// for both backends: which nodes form the group is a fact of the graph, not of a backend.
#pragma once
#include <array>
#include <cstddef>
#include <vector>

#include "core/ir/tensor.h"

namespace ls {

// One chain: rows of x through the stages present, in this order; cur is its last node.
struct HeadRowChain {
    const Tensor* x = nullptr;
    const Tensor *norm = nullptr, *rope = nullptr, *set = nullptr;
    const Tensor* cur = nullptr;
};

struct HeadRowsGroup {
    static constexpr int kMaxChains = 3;  // q, k, v
    std::array<HeadRowChain, kMaxChains> chains{};
    int n = 0;          // chains
    size_t nodes = 0;   // nodes[i .. i + nodes) form the group; 0 or 1: no group
};

// The group of rms_norm / rope / set_rows nodes starting at nodes[i]. A node joins a chain
// when it reads the chain's last output as its next stage, or starts a new chain on an input
// no group node wrote; the group ends before a node that reads what one of its set_rows
// wrote, or a group output other than as its chain's next stage. Shapes and types are the
// backend's to check.
HeadRowsGroup find_head_rows(const std::vector<Tensor*>& nodes, size_t i);

// The tensor whose memory t views (t itself when it is no view).
inline const Tensor* view_base(const Tensor* t) {
    while (t->view_src) t = t->view_src;
    return t;
}

}  // namespace ls
