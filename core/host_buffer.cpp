#include "core/host_buffer.h"

#include <cstdlib>
#include <cstring>
#include <new>
#include <stdexcept>

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

void HostBackend::upload(Buffer& dst, size_t off, const void* src, size_t n) { std::memcpy(dst.host + off, src, n); }
void HostBackend::download(const Buffer& src, size_t off, void* dst, size_t n) { std::memcpy(dst, src.host + off, n); }
void HostBackend::fill(Buffer& dst, size_t off, size_t n, uint8_t v) { std::memset(dst.host + off, v, n); }

void HostBackend::copy(Buffer& buf, size_t dst_off, size_t src_off, size_t n) {
    if (dst_off + n > buf.size || src_off + n > buf.size) throw std::out_of_range("buffer copy past the end of the buffer");
    std::memmove(buf.host + dst_off, buf.host + src_off, n);
}

}  // namespace ls
