#include "backends/vulkan/recorder.h"

#include <chrono>
#include <stdexcept>

#include "backends/vulkan/vk_buffer.h"

namespace ls::vk {
namespace {
bool overlaps(const std::vector<Range>& v, const Range& r) {
    for (const Range& x : v)
        if (x.lo < r.hi && r.lo < x.hi) return true;
    return false;
}
}  // namespace

uint64_t Recorder::addr(const Tensor* t) const {
    if (!t->buffer) throw std::logic_error("vulkan: tensor '" + t->name + "' has no buffer");
    if (t->buffer->backend != &owner_) throw std::logic_error("vulkan: a tensor lives in another backend's buffer");
    const VkBuf& b = static_cast<const VkBuf&>(*t->buffer);
    return b.chunk->addr + b.off + t->offset;
}

void Recorder::dispatch_bytes(const std::string& variant, const void* pc, uint32_t size, uint32_t gx, uint32_t gy, const Range* reads,
                              size_t n_reads, const Range* writes, size_t n_writes) {
    bool dep = false;
    for (size_t i = 0; i < n_reads; ++i) dep |= overlaps(pending_w_, reads[i]);
    for (size_t i = 0; i < n_writes; ++i) dep |= overlaps(pending_w_, writes[i]) || overlaps(pending_r_, writes[i]);
    if (dep) {
        VkMemoryBarrier mb{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
        mb.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_SHADER_READ_BIT;
        mb.dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT;
        ctx.vkCmdPipelineBarrier(ctx.cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, 0, 1, &mb,
                                 0, nullptr, 0, nullptr);
        pending_w_.clear();
        pending_r_.clear();
        ++barriers_;
    }
    pending_r_.insert(pending_r_.end(), reads, reads + n_reads);
    pending_w_.insert(pending_w_.end(), writes, writes + n_writes);
    ctx.vkCmdBindPipeline(ctx.cmd, VK_PIPELINE_BIND_POINT_COMPUTE, ctx.pipeline(variant));
    ctx.vkCmdPushConstants(ctx.cmd, ctx.layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, size, pc);
    ctx.vkCmdDispatch(ctx.cmd, gx, gy, 1);
    ++dispatches_;
    if (prof_ && ts_pool_) {  // LOCKSTEP_PROFILE with GPU timestamps: one after each dispatch
        if (ts_keys_.size() + 1 >= ts_cap_) {
            ++untimed_;
            return;
        }
        ts_keys_.push_back(node ? variant + ": " + op_times_key(*node) : variant);
        ctx.vkCmdWriteTimestamp(ctx.cmd, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, ts_pool_, uint32_t(ts_keys_.size()));
    } else if (prof_) {  // LOCKSTEP_PROFILE without them: each dispatch submitted and timed on its own
        if (ctx.vkEndCommandBuffer(ctx.cmd) != VK_SUCCESS) throw std::runtime_error("vulkan: vkEndCommandBuffer failed");
        const auto t0 = std::chrono::steady_clock::now();
        ctx.submit_and_wait();
        prof_->add(node ? variant + ": " + op_times_key(*node) : variant,
                   std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
        VkCommandBufferBeginInfo bi{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
        bi.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
        if (ctx.vkBeginCommandBuffer(ctx.cmd, &bi) != VK_SUCCESS) throw std::runtime_error("vulkan: vkBeginCommandBuffer failed");
        pending_w_.clear();
        pending_r_.clear();
    }
}

// A dispatch's row gets the time from the previous timestamp to its own: its GPU time where a
// barrier ordered it after the one before, the time it added where the two overlapped.
void Recorder::take_profile(const std::vector<double>& seconds) {
    if (!prof_) return;
    for (size_t i = 0; i < ts_keys_.size() && i + 1 < seconds.size(); ++i) prof_->add(ts_keys_[i], seconds[i + 1] - seconds[i]);
}

}  // namespace ls::vk
