// The op graph of one ubatch. Builder functions (core/ir/ops.h) append nodes in topological
// order; persistent tensors (weights, caches) are referenced, not owned.
#pragma once
#include <deque>
#include <initializer_list>
#include <memory>
#include <string>
#include <vector>

#include "core/ir/tensor.h"

namespace ls {

class Graph {
public:
    Graph() = default;
    Graph(const Graph&) = delete;
    Graph& operator=(const Graph&) = delete;

    // A new tensor owned by the graph (not yet a node).
    Tensor* new_tensor(DType type, std::initializer_list<int64_t> ne, const char* name = "");
    // An input filled from host memory before compute; the bytes are copied now.
    Tensor* input(DType type, std::initializer_list<int64_t> ne, const void* host_data, const char* name);
    // A copy of t owned by this graph (not yet a node): the scheduler's pieces copy the nodes
    // of a larger graph this way and then point their sources at their own tensors.
    Tensor* clone(const Tensor& t);
    // An input shaped like t (contiguous), whose bytes are given later by set_input_data.
    Tensor* input_like(const Tensor& t, const std::string& name);
    // Replaces the bytes an input is filled from (size must match the tensor's).
    void set_input_data(const Tensor* input, std::vector<uint8_t> bytes);
    // Appends t as a node (called by the op builders).
    Tensor* add_node(Tensor* t);
    // Marks a tensor whose value the caller reads after compute (kept alive to the end).
    void mark_output(Tensor* t) { outputs_.push_back(t); }

    const std::vector<Tensor*>& nodes() const { return nodes_; }
    const std::vector<Tensor*>& inputs() const { return inputs_; }
    const std::vector<Tensor*>& outputs() const { return outputs_; }
    const std::vector<uint8_t>& input_data(size_t i) const { return input_data_[i]; }
    // The bytes input t is filled from, or null (t is no input of this graph, or its bytes are
    // not given yet). Index data is read on the host this way (core/ir/index_inputs.h).
    const std::vector<uint8_t>* host_data(const Tensor* t) const;

private:
    std::deque<Tensor> arena_;  // deque: stable addresses
    std::vector<Tensor*> nodes_, inputs_, outputs_;
    std::vector<std::vector<uint8_t>> input_data_;
};

// Places every intermediate and input tensor of `g` in one compute buffer, reusing the
// bytes of tensors whose last reader has run. Views take their base's place. Returns the
// buffer size needed; sets offsets only (buffers are bound by bind_compute_buffer).
size_t plan_graph(Graph& g, size_t alignment = 64);
void bind_compute_buffer(Graph& g, Buffer* buf);

}  // namespace ls
