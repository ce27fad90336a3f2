#include "core/ir/host_buffer.h"

#include <cstdlib>
#include <cstring>
#include <new>
#include <stdexcept>
#if defined(__linux__)
#include <sys/mman.h>
#endif

namespace ls {
namespace {
struct OwnedHostBuffer : Buffer {
    ~OwnedHostBuffer() override { std::free(host); }
};

#if defined(__linux__) && !defined(__SANITIZE_ADDRESS__)
// Large buffers (weights copied from the file, KV cache, scratch) come from anonymous
// mappings marked for transparent huge pages: decode streams every weight once a token, and
// with 4 KiB pages the page walks cost ~6% of generation speed on the default model. (Not
// under AddressSanitizer, which checks malloc'd memory only.)
constexpr size_t kHugeFrom = size_t(32) << 20, kHuge = size_t(2) << 20;
struct MappedHostBuffer : Buffer {
    size_t mapped = 0;
    ~MappedHostBuffer() override { munmap(host, mapped); }
};
#endif
}  // namespace

std::unique_ptr<Buffer> make_host_buffer(Backend* owner, size_t bytes) {
#if defined(__linux__) && !defined(__SANITIZE_ADDRESS__)
    if (bytes >= kHugeFrom) {
        auto m = std::make_unique<MappedHostBuffer>();
        m->mapped = (bytes + kHuge - 1) / kHuge * kHuge;
        void* p = mmap(nullptr, m->mapped, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED) throw std::bad_alloc();
        madvise(p, m->mapped, MADV_HUGEPAGE);  // advice only: refused, the memory still works
        m->host = static_cast<uint8_t*>(p);
        m->backend = owner;
        m->size = bytes;
        return m;
    }
#endif
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
