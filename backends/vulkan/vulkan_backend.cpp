// The Vulkan backend: buffers suballocated from device memory, weights copied once at load
// (Backend::wrap_host's default), and one command buffer per graph. Each op's host checks,
// aux-buffer needs and dispatches live in its own file (ops/<op>.cpp), reached through the
// table op_table.cpp builds from the registry rows, so compute() is two loops: a host pass
// (every check before anything is recorded, so an error leaves every buffer untouched) and
// the recording (recorder.h).
#include "backends/vulkan/vulkan_backend.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <stdexcept>

#include "backends/vulkan/fused.h"
#include "backends/vulkan/ops/vk_ops.h"
#include "backends/vulkan/recorder.h"
#include "backends/vulkan/step_stats.h"
#include "backends/vulkan/vk_buffer.h"
#include "backends/vulkan/vk_context.h"

namespace ls {
namespace {
using namespace vk;

class VulkanBackend final : public Backend {
public:
    explicit VulkanBackend(int device) : ctx_(std::make_shared<Context>(device)) {}
    ~VulkanBackend() override {
        aux_.reset();
        if (profile_) times_.print(stderr, "vulkan", "time per shader variant,");
        if (verbose_) stats_.print(stderr, ctx_->host_mapped());
    }

    std::string name() const override { return "vulkan"; }

    std::unique_ptr<Buffer> alloc(size_t bytes) override {
        auto b = std::make_unique<VkBuf>();
        b->ctx = ctx_;
        b->backend = this;
        b->size = bytes;
        b->chunk = ctx_->allocate(bytes, b->off);
        return b;
    }
    void upload(Buffer& dst, size_t off, const void* src, size_t n) override {
        VkBuf& b = own(dst);
        bounds(b, off, n);
        stats_.pending.up_bytes += n;
        timed(stats_.pending.uploads, stats_.pending.up_s, [&] { ctx_->write(b.chunk, b.off + off, src, n); });
    }
    void download(const Buffer& src, size_t off, void* dst, size_t n) override {
        VkBuf& b = own(src);
        bounds(b, off, n);
        stats_.pending.down_bytes += n;
        timed(stats_.pending.downloads, stats_.pending.down_s, [&] { ctx_->read(b.chunk, b.off + off, dst, n); });
    }
    void fill(Buffer& dst, size_t off, size_t n, uint8_t v) override {
        VkBuf& b = own(dst);
        bounds(b, off, n);
        timed(stats_.pending.fills, stats_.pending.fill_s, [&] { ctx_->fill(b.chunk, b.off + off, n, v); });
    }

    bool supports(const Tensor& n) const override { return vulkan_supports_node(n); }

    void compute(const Graph& g) override;
    VulkanGraphCounts last_counts() const { return {stats_.last_dispatches, stats_.last_barriers}; }

private:
    VkBuf& own(const Buffer& b) const {
        if (b.backend != this) throw std::logic_error("vulkan: a tensor lives in another backend's buffer");
        return const_cast<VkBuf&>(static_cast<const VkBuf&>(b));
    }
    static void bounds(const VkBuf& b, size_t off, size_t n) {
        if (off + n > b.size) throw std::out_of_range("vulkan: copy outside the buffer");
    }

    std::shared_ptr<Context> ctx_;
    std::unique_ptr<Buffer> aux_;  // activation rows, attention block partials
    bool profile_ = std::getenv("LOCKSTEP_PROFILE") != nullptr;
    // LOCKSTEP_VK_FUSE=0: every node recorded on its own (fused.h), to compare.
    bool fuse_ = !(std::getenv("LOCKSTEP_VK_FUSE") && std::string(std::getenv("LOCKSTEP_VK_FUSE")) == "0");
    // LOCKSTEP_VK_VERBOSE: where a step's time goes (step_stats.h), printed at the end.
    bool verbose_ = std::getenv("LOCKSTEP_VK_VERBOSE") != nullptr;
    StepStats stats_;
    template <class F>
    void timed(size_t& calls, double& secs, F&& f) {
        if (!verbose_) return f();
        const auto t0 = std::chrono::steady_clock::now();
        f();
        ++calls;
        secs += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    }
    OpTimes times_;
    bool untimed_warned_ = false;
};

void VulkanBackend::compute(const Graph& g) {
    const auto t0 = std::chrono::steady_clock::now();
    ctx_->drop_readback();
    // Pass 1 (host): the aux buffer's layout and the launch shapes.
    Plan plan;
    plan.graph = &g;
    plan.attn_split = ctx_->attn_split;
    plan.attn_tile = ctx_->attn_tile;
    for (const Tensor* n : g.nodes()) {
        if (!supports(*n))
            throw std::runtime_error(unsupported_node("vulkan", *n));
        op_entry(n->op).plan(*n, plan);
    }
    auto al = [](size_t n) { return (n + 255) / 256 * 256; };
    const size_t act_off = 0, attn_off = al(plan.act_bytes);
    const size_t aux_need = attn_off + al(plan.attn_bytes) + 256;
    if (!aux_ || aux_->size < aux_need) {
        aux_.reset();
        aux_ = alloc(aux_need + aux_need / 4);
    }
    const uint64_t aux = own(*aux_).chunk->addr + own(*aux_).off;
    // GPU timestamps: after each dispatch for the profile, at the start and the end for the
    // verbose split (where the queue has them).
    const uint32_t ts_cap = !ctx_->has_timestamps() ? 0 : profile_ ? uint32_t(8 * g.nodes().size() + 2) : verbose_ ? 2 : 0;
    const VkQueryPool ts_pool = ts_cap ? ctx_->timestamps(ts_cap) : VK_NULL_HANDLE;
    Recorder rec(*ctx_, *this, plan, profile_ ? &times_ : nullptr, profile_ ? ts_pool : VK_NULL_HANDLE, ts_cap);
    rec.act = Range{aux + act_off, aux + act_off + std::max<size_t>(plan.act_bytes, 1)};
    rec.attn = Range{aux + attn_off, aux + attn_off + std::max<size_t>(plan.attn_bytes, 1)};

    // Pass 2: record one command buffer.
    VkCommandBufferBeginInfo bi{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
    bi.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
    if (ctx_->vkBeginCommandBuffer(ctx_->cmd, &bi) != VK_SUCCESS) throw std::runtime_error("vulkan: vkBeginCommandBuffer failed");
    if (ts_pool) {
        ctx_->vkCmdResetQueryPool(ctx_->cmd, ts_pool, 0, ts_cap);
        ctx_->vkCmdWriteTimestamp(ctx_->cmd, VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT, ts_pool, 0);
    }
    ctx_->record_uploads();  // the inputs written since the last graph (discrete GPUs)
    const uint32_t n_ts = profile_ ? 0 : ts_pool ? 2 : 0;  // the profile's: rec.timestamps_written()
    try {
        const std::vector<Tensor*>& nodes = g.nodes();
        for (size_t i = 0; i < nodes.size(); ++i) {
            rec.node = nodes[i];
            if (const size_t k = fuse_ ? record_fused(nodes, i, rec) : 0) {
                i += k - 1;
                continue;
            }
            op_entry(nodes[i]->op).record(*nodes[i], rec);
        }
        if (!ctx_->host_mapped()) {  // the outputs (logits) copied for the host in this buffer
            std::vector<Context::Span> spans;
            for (const Tensor* t : g.outputs())
                if (t->buffer && t->buffer->backend == this)
                    spans.push_back({own(*t->buffer).chunk, own(*t->buffer).off + t->offset, t->nbytes()});
            ctx_->record_readback(spans);
        }
        if (n_ts == 2) ctx_->vkCmdWriteTimestamp(ctx_->cmd, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, ts_pool, 1);
        if (ctx_->vkEndCommandBuffer(ctx_->cmd) != VK_SUCCESS) throw std::runtime_error("vulkan: vkEndCommandBuffer failed");
    } catch (...) {  // nothing was submitted: the buffer goes back to the initial state
        ctx_->vkEndCommandBuffer(ctx_->cmd);
        ctx_->vkResetCommandBuffer(ctx_->cmd, 0);
        ctx_->drop_readback();
        throw;
    }
    const auto t1 = std::chrono::steady_clock::now();
    ctx_->submit_and_wait();
    ctx_->uploads_done();
    ctx_->readback_done();
    const auto t2 = std::chrono::steady_clock::now();
    double gpu_s = -1;
    if (const uint32_t n = profile_ ? rec.timestamps_written() : n_ts) {
        const std::vector<double> ts = ctx_->timestamp_seconds(n);
        if (profile_) rec.take_profile(ts);
        if (n > 1) gpu_s = ts.back();
    }
    stats_.last_dispatches = rec.dispatches(), stats_.last_barriers = rec.barriers(), stats_.last_nodes = g.nodes().size();
    if (verbose_)
        stats_.add_graph(std::chrono::duration<double>(t1 - t0).count(), std::chrono::duration<double>(t2 - t1).count(), gpu_s);
    if (rec.untimed() && !untimed_warned_) {
        untimed_warned_ = true;
        std::fprintf(stderr, "vulkan: LOCKSTEP_PROFILE: %zu dispatches of a graph past its timestamp queries are not in the profile\n", rec.untimed());
    }
    if (profile_) times_.end_graph();
}

}  // namespace

std::vector<VulkanDeviceDesc> vulkan_devices() noexcept {
    std::vector<VulkanDeviceDesc> out;
    try {
        Loader& L = loader();
        for (VkPhysicalDevice pd : L.usable) {
            VkPhysicalDeviceSubgroupProperties sub{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES};
            VkPhysicalDeviceProperties2 props{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2};
            props.pNext = &sub;
            L.vkGetPhysicalDeviceProperties2(pd, &props);
            VkPhysicalDeviceMemoryProperties mp;
            L.vkGetPhysicalDeviceMemoryProperties(pd, &mp);
            VulkanDeviceDesc d;
            d.name = props.properties.deviceName;
            for (uint32_t i = 0; i < mp.memoryHeapCount; ++i)
                if (mp.memoryHeaps[i].flags & VK_MEMORY_HEAP_DEVICE_LOCAL_BIT) d.memory_total = std::max<size_t>(d.memory_total, mp.memoryHeaps[i].size);
            const uint32_t v = props.properties.apiVersion;
            d.features = "Vulkan " + std::to_string(VK_API_VERSION_MAJOR(v)) + "." + std::to_string(VK_API_VERSION_MINOR(v)) +
                         ", subgroup " + std::to_string(sub.subgroupSize) +
                         ((sub.supportedStages & VK_SHADER_STAGE_COMPUTE_BIT) && (sub.supportedOperations & VK_SUBGROUP_FEATURE_ARITHMETIC_BIT)
                              ? " (arithmetic)" : (sub.supportedStages & VK_SHADER_STAGE_COMPUTE_BIT) && (sub.supportedOperations & VK_SUBGROUP_FEATURE_BASIC_BIT) ? " (basic)" : " (no ops)") +
                         ", " +
                         std::to_string(props.properties.limits.maxComputeSharedMemorySize / 1024) + " KiB shared";
            out.push_back(d);
        }
    } catch (...) {
    }
    return out;
}

const char* vulkan_requirements() noexcept {
    return "Vulkan 1.2, a compute queue, bufferDeviceAddress, storageBuffer8BitAccess, storageBuffer16BitAccess "
           "(no float64, int64, int8 or int16 arithmetic)";
}

std::vector<std::pair<std::string, std::string>> vulkan_refused_devices() noexcept {
    std::vector<std::pair<std::string, std::string>> out;
    try {
        for (const vk::DeviceReport& d : vk::device_reports()) {
            if (d.missing.empty()) continue;
            std::string why;
            for (const std::string& m : d.missing) why += (why.empty() ? "" : ", ") + m;
            out.emplace_back(d.name + " (" + d.type + ")", why);
        }
    } catch (...) {
    }
    return out;
}

// The shaders index elements with 32-bit integers.
bool vulkan_supports_node(const Tensor& n) {
    if (n.op == OpId::NONE || n.op >= OpId::COUNT) return false;
    if (n.nelements() >= (int64_t(1) << 32)) return false;
    for (const Tensor* s : n.src)
        if (s && s->nelements() >= (int64_t(1) << 32)) return false;
    return vk::op_entry(n.op).supports(n);
}

std::unique_ptr<Backend> make_vulkan_backend(int device) { return std::make_unique<VulkanBackend>(device); }

VulkanGraphCounts vulkan_last_graph_counts(const Backend& b) {
    const auto* v = dynamic_cast<const VulkanBackend*>(&b);
    if (!v) throw std::invalid_argument("vulkan_last_graph_counts: '" + b.name() + "' is not a Vulkan backend");
    return v->last_counts();
}

}  // namespace ls
