// Device memory: chunks suballocated first fit (larger requests get their own), and host
// copies (memcpy where the memory is mapped, a staging buffer otherwise).
#include "backends/vulkan/vk_context.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <string>

namespace ls::vk {
namespace {

constexpr size_t kChunkBytes = size_t(256) << 20;
constexpr size_t kAlign = 256;
constexpr size_t kStagingBytes = size_t(64) << 20;
constexpr size_t kUploadBytes = size_t(1) << 20;  // a step's deferred input copies (Context::write)
constexpr size_t kReadbackBytes = size_t(64) << 20;  // a graph's outputs copied for the host
std::string mib(size_t b) { return std::to_string((b + (1 << 19)) >> 20) + " MiB"; }

}  // namespace

Chunk* Context::new_chunk(size_t bytes, bool dedicated) {
    auto c = std::make_unique<Chunk>();
    c->size = bytes;
    c->dedicated = dedicated;
    VkBufferCreateInfo bci{VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO};
    bci.size = bytes;
    bci.usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_SHADER_DEVICE_ADDRESS_BIT |
                VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT;
    check(vkCreateBuffer(dev, &bci, nullptr, &c->buf), "vkCreateBuffer");
    VkMemoryRequirements req;
    vkGetBufferMemoryRequirements(dev, c->buf, &req);
    VkMemoryAllocateFlagsInfo afi{VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_FLAGS_INFO};
    afi.flags = VK_MEMORY_ALLOCATE_DEVICE_ADDRESS_BIT;
    VkMemoryAllocateInfo mai{VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO};
    mai.pNext = &afi;
    mai.allocationSize = req.size;
    mai.memoryTypeIndex = mem_type_;
    if (vkAllocateMemory(dev, &mai, nullptr, &c->mem) != VK_SUCCESS) {
        vkDestroyBuffer(dev, c->buf, nullptr);
        const size_t free_b = heap_size_ > allocated_ ? heap_size_ - allocated_ : 0;
        throw std::runtime_error("vulkan: out of device memory on " + name + ": needed " + mib(req.size) + " more, " +
                                 mib(free_b) + " free of " + mib(heap_size_) + " (" + mib(allocated_) + " in use by lockstep)");
    }
    allocated_ += req.size;
    check(vkBindBufferMemory(dev, c->buf, c->mem, 0), "vkBindBufferMemory");
    VkBufferDeviceAddressInfo dai{VK_STRUCTURE_TYPE_BUFFER_DEVICE_ADDRESS_INFO};
    dai.buffer = c->buf;
    c->addr = vkGetBufferDeviceAddress(dev, &dai);
    if (host_mapped_) {
        void* p = nullptr;
        check(vkMapMemory(dev, c->mem, 0, VK_WHOLE_SIZE, 0, &p), "vkMapMemory");
        c->mapped = static_cast<uint8_t*>(p);
    }
    c->free[0] = bytes;
    chunks_.push_back(std::move(c));
    return chunks_.back().get();
}

void Context::destroy_chunk(Chunk* c) {
    vkDestroyBuffer(dev, c->buf, nullptr);
    vkFreeMemory(dev, c->mem, nullptr);
}

Chunk* Context::allocate(size_t bytes, size_t& offset) {
    bytes = (std::max<size_t>(bytes, 1) + kAlign - 1) / kAlign * kAlign;
    if (bytes <= kChunkBytes / 2) {
        for (auto& c : chunks_) {
            if (c->dedicated) continue;
            for (auto it = c->free.begin(); it != c->free.end(); ++it) {
                if (it->second < bytes) continue;
                offset = it->first;
                const size_t rest = it->second - bytes;
                c->free.erase(it);
                if (rest) c->free[offset + bytes] = rest;
                return c.get();
            }
        }
        Chunk* c = new_chunk(kChunkBytes, false);
        offset = 0;
        c->free.clear();
        c->free[bytes] = kChunkBytes - bytes;
        return c;
    }
    Chunk* c = new_chunk(bytes, true);
    c->free.clear();
    offset = 0;
    return c;
}

void Context::release(Chunk* c, size_t offset, size_t bytes) {
    // No pending copy may land in memory handed to someone else. (Called from a Buffer's
    // destructor: a device that fails the submit loses the copies, not the process.)
    try {
        flush_uploads();
    } catch (...) {
        pending_.clear();
        upload_used_ = 0;
    }
    drop_readback();
    if (c->dedicated) {
        for (auto it = chunks_.begin(); it != chunks_.end(); ++it)
            if (it->get() == c) {
                vkDeviceWaitIdle(dev);
                allocated_ -= std::min(allocated_, c->size);
                destroy_chunk(c);
                chunks_.erase(it);
                return;
            }
        return;
    }
    bytes = (std::max<size_t>(bytes, 1) + kAlign - 1) / kAlign * kAlign;
    auto it = c->free.emplace(offset, bytes).first;
    auto next = std::next(it);
    if (next != c->free.end() && it->first + it->second == next->first) {
        it->second += next->second;
        c->free.erase(next);
    }
    if (it != c->free.begin()) {
        auto prev = std::prev(it);
        if (prev->first + prev->second == it->first) {
            prev->second += it->second;
            c->free.erase(it);
        }
    }
}

std::unique_ptr<Chunk> Context::host_chunk(size_t bytes, const char* what) {
    // A host-visible chunk used only for copies.
    auto s = std::make_unique<Chunk>();
    s->size = bytes;
    VkBufferCreateInfo bci{VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO};
    bci.size = bytes;
    bci.usage = VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT;
    check(vkCreateBuffer(dev, &bci, nullptr, &s->buf), "vkCreateBuffer");
    VkMemoryRequirements req;
    vkGetBufferMemoryRequirements(dev, s->buf, &req);
    VkMemoryAllocateInfo mai{VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO};
    mai.allocationSize = req.size;
    mai.memoryTypeIndex = staging_type_;
    if (vkAllocateMemory(dev, &mai, nullptr, &s->mem) != VK_SUCCESS) {
        vkDestroyBuffer(dev, s->buf, nullptr);
        throw std::runtime_error(std::string("vulkan: vkAllocateMemory (") + what + ") failed");
    }
    check(vkBindBufferMemory(dev, s->buf, s->mem, 0), "vkBindBufferMemory");
    void* p = nullptr;
    check(vkMapMemory(dev, s->mem, 0, VK_WHOLE_SIZE, 0, &p), "vkMapMemory");
    s->mapped = static_cast<uint8_t*>(p);
    return s;
}

void Context::staging_copy(Chunk* c, size_t off, size_t n, bool to_device, uint8_t* host) {
    flush_uploads();
    if (!staging_) staging_ = host_chunk(kStagingBytes, "staging");
    for (size_t done = 0; done < n;) {
        const size_t k = std::min(kStagingBytes, n - done);
        if (to_device) std::memcpy(staging_->mapped, host + done, k);
        VkCommandBufferBeginInfo bi{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
        bi.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
        check(vkBeginCommandBuffer(cmd, &bi), "vkBeginCommandBuffer");
        VkBufferCopy r{to_device ? 0 : off + done, to_device ? off + done : 0, k};
        if (to_device) vkCmdCopyBuffer(cmd, staging_->buf, c->buf, 1, &r);
        else vkCmdCopyBuffer(cmd, c->buf, staging_->buf, 1, &r);
        check(vkEndCommandBuffer(cmd), "vkEndCommandBuffer");
        submit_and_wait();
        if (!to_device) std::memcpy(host + done, staging_->mapped, k);
        done += k;
    }
}

void Context::write(Chunk* c, size_t off, const void* src, size_t n) {
    drop_readback();
    if (c->mapped) {
        std::memcpy(c->mapped + off, src, n);
        return;
    }
    if (n == 0) return;
    if (n <= kUploadBytes / 4) {  // a step's input: copied with the next graph
        // Copies in one command buffer are not ordered among themselves: a write over bytes
        // a pending one writes goes after it, in a submit of its own.
        bool overlap = false;
        for (const PendingCopy& p : pending_)
            overlap |= p.dst == c->buf && p.region.dstOffset < off + n && off < p.region.dstOffset + p.region.size;
        if (overlap || upload_used_ + n > kUploadBytes) flush_uploads();
        if (!upload_) upload_ = host_chunk(kUploadBytes, "uploads");
        std::memcpy(upload_->mapped + upload_used_, src, n);
        pending_.push_back({c->buf, VkBufferCopy{upload_used_, off, n}});
        upload_used_ = (upload_used_ + n + 15) / 16 * 16;
        return;
    }
    staging_copy(c, off, n, true, static_cast<uint8_t*>(const_cast<void*>(src)));
}

void Context::record_uploads() {
    if (pending_.empty()) return;
    for (const PendingCopy& p : pending_) vkCmdCopyBuffer(cmd, upload_->buf, p.dst, 1, &p.region);
    VkMemoryBarrier mb{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
    mb.srcAccessMask = VK_ACCESS_TRANSFER_WRITE_BIT;
    mb.dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT;
    vkCmdPipelineBarrier(cmd, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, 0, 1, &mb, 0, nullptr, 0, nullptr);
}

void Context::uploads_done() {
    // The command buffer that carried them has run: the upload buffer is free again. (A
    // recording that failed leaves them pending, for the next graph or flush.)
    pending_.clear();
    upload_used_ = 0;
}

void Context::flush_uploads() {
    if (pending_.empty()) return;
    VkCommandBufferBeginInfo bi{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
    bi.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
    check(vkBeginCommandBuffer(cmd, &bi), "vkBeginCommandBuffer");
    for (const PendingCopy& p : pending_) vkCmdCopyBuffer(cmd, upload_->buf, p.dst, 1, &p.region);
    check(vkEndCommandBuffer(cmd), "vkEndCommandBuffer");
    submit_and_wait();
    pending_.clear();
    upload_used_ = 0;
}

void Context::read(Chunk* c, size_t off, void* dst, size_t n) {
    if (c->mapped) std::memcpy(dst, c->mapped + off, n);
    else if (!read_staged(c, off, dst, n)) staging_copy(c, off, n, false, static_cast<uint8_t*>(dst));
}

void Context::record_readback(const std::vector<Span>& spans) {
    drop_readback();
    size_t total = 0;
    for (const Span& s : spans) total += (s.n + 15) / 16 * 16;
    if (spans.empty() || total > kReadbackBytes) return;
    if (!readback_ || readback_->size < total) {
        if (readback_) destroy_chunk(readback_.get());
        readback_.reset();
        readback_ = host_chunk(std::max(total, size_t(1) << 20), "read-back");
    }
    VkMemoryBarrier mb{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
    mb.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT;
    mb.dstAccessMask = VK_ACCESS_TRANSFER_READ_BIT;
    vkCmdPipelineBarrier(cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_PIPELINE_STAGE_TRANSFER_BIT, 0, 1, &mb, 0, nullptr, 0, nullptr);
    size_t at = 0;
    for (const Span& s : spans) {
        const VkBufferCopy r{s.off, at, s.n};
        vkCmdCopyBuffer(cmd, s.c->buf, readback_->buf, 1, &r);
        rb_.push_back({s.c, s.off, s.n, at});
        at += (s.n + 15) / 16 * 16;
    }
    VkMemoryBarrier hb{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
    hb.srcAccessMask = VK_ACCESS_TRANSFER_WRITE_BIT;
    hb.dstAccessMask = VK_ACCESS_HOST_READ_BIT;
    vkCmdPipelineBarrier(cmd, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_PIPELINE_STAGE_HOST_BIT, 0, 1, &hb, 0, nullptr, 0, nullptr);
}

bool Context::read_staged(const Chunk* c, size_t off, void* dst, size_t n) {
    if (!rb_valid_) return false;
    for (const Staged& s : rb_)
        if (s.c == c && off >= s.off && off + n <= s.off + s.n) {
            std::memcpy(dst, readback_->mapped + s.at + (off - s.off), n);
            return true;
        }
    return false;
}

void Context::fill(Chunk* c, size_t off, size_t n, uint8_t v) {
    drop_readback();
    if (c->mapped) { std::memset(c->mapped + off, v, n); return; }
    flush_uploads();
    if (off % 4 == 0 && n % 4 == 0) {
        VkCommandBufferBeginInfo bi{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
        bi.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
        check(vkBeginCommandBuffer(cmd, &bi), "vkBeginCommandBuffer");
        vkCmdFillBuffer(cmd, c->buf, off, n, uint32_t(v) * 0x01010101u);
        check(vkEndCommandBuffer(cmd), "vkEndCommandBuffer");
        submit_and_wait();
        return;
    }
    std::vector<uint8_t> tmp(n, v);
    write(c, off, tmp.data(), n);
}
}  // namespace ls::vk
