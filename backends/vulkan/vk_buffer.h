// A backend Buffer of the Vulkan backend: a range of one suballocated Chunk (vk_memory.cpp),
// given back when the Buffer dies.
#pragma once
#include <memory>

#include "backends/vulkan/vk_context.h"
#include "core/ir/backend.h"

namespace ls::vk {

struct VkBuf final : Buffer {
    std::shared_ptr<Context> ctx;
    Chunk* chunk = nullptr;
    size_t off = 0;
    // No chunk: the allocation itself failed (out of device memory), and nothing is held.
    ~VkBuf() override {
        if (chunk) ctx->release(chunk, off, size);
    }
};

}  // namespace ls::vk
