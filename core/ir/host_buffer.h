// Host-memory buffers, shared by the backends whose memory the CPU addresses directly.
#pragma once
#include <memory>

#include "core/ir/backend.h"
#include "core/ir/tensor.h"

namespace ls {

// 64-byte aligned, owned host memory (large buffers: huge-page backed where the OS allows).
std::unique_ptr<Buffer> make_host_buffer(Backend* owner, size_t bytes);
// Wraps memory the caller keeps alive (an mmap'd model); never written through.
std::unique_ptr<Buffer> wrap_host_memory(Backend* owner, const void* p, size_t bytes);

// The buffer half of a backend whose memory the CPU addresses (reference, CPU).
class HostBackend : public Backend {
public:
    std::unique_ptr<Buffer> alloc(size_t bytes) override { return make_host_buffer(this, bytes); }
    std::unique_ptr<Buffer> wrap_host(const void* p, size_t bytes) override { return wrap_host_memory(this, p, bytes); }
    void upload(Buffer& dst, size_t off, const void* src, size_t n) override;
    void download(const Buffer& src, size_t off, void* dst, size_t n) override;
    void fill(Buffer& dst, size_t off, size_t n, uint8_t v) override;
    void copy(Buffer& buf, size_t dst_off, size_t src_off, size_t n) override;
    bool supports(const Tensor& n) const override { return n.op != OpId::NONE; }
};

}  // namespace ls
