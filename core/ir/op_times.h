// Time per op and shapes, for LOCKSTEP_PROFILE on every backend: rows keyed
// "mul_mat q8_0[640,262144] x f32[640,1]" (the op and its first two sources), so a step's
// matrices, its decode and its prompt forms each get their own row; printed sorted by time.
#pragma once
#include <cstddef>
#include <cstdio>
#include <map>
#include <string>

#include "core/ir/tensor.h"

namespace ls {

// The row key of a node; fused: the node run in the same kernel after it ("a + b").
std::string op_times_key(const Tensor& node, const Tensor* fused = nullptr);

class OpTimes {
public:
    void add(const std::string& key, double seconds);
    void end_graph() { ++graphs_; }
    // "<backend> backend: <what> per op and shapes (...)", then ms, share, calls, us per call.
    void print(std::FILE* f, const char* backend, const char* what) const;
    bool empty() const { return rows_.empty(); }

private:
    struct Row { double s = 0; size_t calls = 0; };
    std::map<std::string, Row> rows_;
    double total_s_ = 0;
    size_t graphs_ = 0;
};

}  // namespace ls
