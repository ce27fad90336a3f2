#include "core/host_buffer.h"

#include <cstdlib>
#include <new>

namespace ls {
namespace {
struct OwnedHostBuffer : Buffer {
    ~OwnedHostBuffer() override { std::free(host); }
};
}  // namespace

std::unique_ptr<Buffer> make_host_buffer(Backend* owner, size_t bytes) {
    auto b = std::make_unique<OwnedHostBuffer>();
    size_t n = (bytes + 63) / 64 * 64;
    b->host = static_cast<uint8_t*>(std::aligned_alloc(64, n ? n : 64));
    if (!b->host) throw std::bad_alloc();
    b->backend = owner;
    b->size = bytes;
    return b;
}

std::unique_ptr<Buffer> wrap_host_memory(Backend* owner, const void* p, size_t bytes) {
    auto b = std::make_unique<Buffer>();
    b->host = static_cast<uint8_t*>(const_cast<void*>(p));
    b->backend = owner;
    b->size = bytes;
    return b;
}

}  // namespace ls
