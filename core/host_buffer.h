// Host-memory buffers, shared by the backends whose memory the CPU addresses directly.
#pragma once
#include <memory>

#include "core/tensor.h"

namespace ls {

// 64-byte aligned, owned host memory.
std::unique_ptr<Buffer> make_host_buffer(Backend* owner, size_t bytes);
// Wraps memory the caller keeps alive (an mmap'd model); never written through.
std::unique_ptr<Buffer> wrap_host_memory(Backend* owner, const void* p, size_t bytes);

}  // namespace ls
