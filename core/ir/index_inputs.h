// Index data: the rows get_rows reads and set_rows writes, attention's query positions and
// sequences, the scans' run tables. It decides which rows an op touches and, on a GPU, the
// shape of its launch, so it must be known on the host before anything runs. Core gives it as
// graph inputs (the model's ubatch: tokens, cache rows, positions, runs), checks it here once
// per graph against the rules of core/rules, and backends read its host bytes from the graph:
// no backend reads a device tensor back, so a node's other inputs may live on any device and
// a GPU's captured graph never waits on the host (issue 31, seam 0b).
#pragma once
#include <cstdint>

#include "core/ir/graph.h"

namespace ls {

// Whether t can be a node's index operand on a backend that takes index data from the host:
// a graph input of its own (not a view), contiguous.
bool is_index_input(const Tensor* t);

// Checks every index operand of g's nodes that is a graph input, with the reference's
// messages (core/rules: row_index_rule.h, attention_rule.h, scan_runs.h): std::out_of_range
// before any backend writes anything. Called by run_graph. Index operands that are not graph
// inputs are the backend's to check (the host backends read them where they are; the GPU
// backends refuse such nodes, is_index_input).
void check_index_inputs(const Graph& g);

// The host bytes of index operand t of a node of g: throws std::logic_error naming op and
// tensor when t is not a graph input whose bytes are known.
const uint8_t* index_bytes(const Graph& g, const Tensor* t, const char* op);
template <class T>
const T* index_data(const Graph& g, const Tensor* t, const char* op) {
    return reinterpret_cast<const T*>(index_bytes(g, t, op));
}

}  // namespace ls
