// The narrow backend interface: buffers, op support, whole-graph compute, synchronization.
// A backend sees the whole graph (so it may fuse) and never gets a call per op.
#pragma once
#include <memory>
#include <string>

#include "core/ir/graph.h"

namespace ls {

class Backend {
public:
    virtual ~Backend() = default;
    virtual std::string name() const = 0;
    // Device memory for persistent tensors and compute buffers (contents undefined).
    virtual std::unique_ptr<Buffer> alloc(size_t bytes) = 0;
    // A buffer holding `bytes` of host memory that stays valid for the buffer's life
    // (an mmap'd model). Host backends use it in place; others copy.
    virtual std::unique_ptr<Buffer> wrap_host(const void* p, size_t bytes);
    virtual void upload(Buffer& dst, size_t offset, const void* src, size_t n) = 0;
    virtual void download(const Buffer& src, size_t offset, void* dst, size_t n) = 0;
    virtual void fill(Buffer& dst, size_t offset, size_t n, uint8_t value) = 0;
    // Copies n bytes inside one buffer (ranges may overlap). The default goes through host
    // memory; backends with a device-side copy override it.
    virtual void copy(Buffer& buf, size_t dst_offset, size_t src_offset, size_t n);
    // Whether compute() can run this node (op, types, shapes).
    virtual bool supports(const Tensor& node) const = 0;
    // Runs every node of g in order. Inputs are already uploaded.
    virtual void compute(const Graph& g) = 0;
    virtual void synchronize() {}
    // Threads used by CPU-side work (ignored by backends that have none).
    virtual void set_threads(int) {}
};

// The error for a node backend `backend` cannot run: the op, its operands' names, shapes and
// types, and the output (both run_graph and a backend's own compute() raise it).
std::string unsupported_node(const std::string& backend, const Tensor& n);
// Runs a graph on a backend: plans it, (re)allocates `scratch` when it is too small,
// uploads the inputs and computes. Outputs can then be downloaded with read_tensor.
void run_graph(Backend& be, Graph& g, std::unique_ptr<Buffer>& scratch);
// Copies a tensor's bytes (must be contiguous) to host memory.
void read_tensor(Backend& be, const Tensor& t, void* dst);
void write_tensor(Backend& be, Tensor& t, const void* src);


// One device a backend can run on, as `lockstep devices` lists it.
struct DeviceInfo {
    std::string backend;  // cpu | vulkan | cuda
    int index = 0;        // what --device takes
    std::string name;
    size_t memory_total = 0, memory_free = 0;  // bytes; 0 where unknown
    std::string features;                      // e.g. "fp16 int8 subgroup 32", "sm_90"
};

}  // namespace ls
