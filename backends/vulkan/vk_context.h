// Vulkan instance, device, queue, memory and pipelines of the Vulkan backend (internal):
// vk_loader.cpp (loader, instance, usable devices), vk_device.cpp (Context's device and
// queue), vk_memory.cpp (suballocation, host copies), vk_pipelines.cpp.
#pragma once
#define VK_NO_PROTOTYPES
#include <algorithm>
#include <vulkan/vulkan.h>

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

namespace ls::vk {

// Every entry point the backend uses, loaded from the loader opened with dlopen.
#define LS_VK_INSTANCE_FNS(X)                                                                     \
    X(vkDestroyInstance) X(vkEnumeratePhysicalDevices) X(vkGetPhysicalDeviceProperties)             \
    X(vkGetPhysicalDeviceProperties2) X(vkGetPhysicalDeviceFeatures2)                               \
    X(vkGetPhysicalDeviceMemoryProperties) X(vkGetPhysicalDeviceQueueFamilyProperties)             \
    X(vkCreateDevice) X(vkGetDeviceProcAddr)
#define LS_VK_DEVICE_FNS(X)                                                                        \
    X(vkDestroyDevice) X(vkGetDeviceQueue) X(vkCreateBuffer) X(vkDestroyBuffer)                    \
    X(vkGetBufferMemoryRequirements) X(vkAllocateMemory) X(vkFreeMemory) X(vkBindBufferMemory)      \
    X(vkMapMemory) X(vkGetBufferDeviceAddress) X(vkCreateCommandPool) X(vkDestroyCommandPool)       \
    X(vkAllocateCommandBuffers) X(vkBeginCommandBuffer) X(vkEndCommandBuffer) X(vkResetCommandBuffer) \
    X(vkQueueSubmit) X(vkCreateFence) X(vkDestroyFence) X(vkWaitForFences) X(vkResetFences)         \
    X(vkCreateShaderModule) X(vkDestroyShaderModule) X(vkCreatePipelineLayout)                     \
    X(vkDestroyPipelineLayout) X(vkCreateComputePipelines) X(vkDestroyPipeline)                    \
    X(vkCmdBindPipeline) X(vkCmdPushConstants) X(vkCmdDispatch) X(vkCmdPipelineBarrier)             \
    X(vkCmdCopyBuffer) X(vkCmdFillBuffer) X(vkDeviceWaitIdle) X(vkCreateQueryPool)                 \
    X(vkDestroyQueryPool) X(vkCmdResetQueryPool) X(vkCmdWriteTimestamp) X(vkGetQueryPoolResults)

struct Loader {
    void* lib = nullptr;
    PFN_vkGetInstanceProcAddr vkGetInstanceProcAddr = nullptr;
    PFN_vkCreateInstance vkCreateInstance = nullptr;
    PFN_vkEnumerateInstanceVersion vkEnumerateInstanceVersion = nullptr;
    VkInstance instance = VK_NULL_HANDLE;
#define LS_X(f) PFN_##f f = nullptr;
    LS_VK_INSTANCE_FNS(LS_X)
#undef LS_X
    std::vector<VkPhysicalDevice> usable;  // devices that meet the requirements, in enumeration order
    std::string error;                     // why there is none, when empty
};

// What the shaders need of a device (README "Backends"): Vulkan 1.2, a compute queue,
// bufferDeviceAddress (tensors are passed as addresses), storageBuffer8BitAccess and
// storageBuffer16BitAccess (block formats read and written in place, a byte or a half at a
// time, converted to 32 bits at once: the modules declare neither Int8 nor Int16). No
// float64, no int64, no 8/16-bit arithmetic. Returns what `pd` lacks, in those names
// (empty: usable).
std::vector<std::string> missing_requirements(Loader& L, VkPhysicalDevice pd);
// Every Vulkan device the loader reports, usable or not (`lockstep devices`).
struct DeviceReport {
    std::string name, type;
    std::vector<std::string> missing;
};
std::vector<DeviceReport> device_reports();
// The process-wide loader and instance (created once; error set when unavailable).
Loader& loader();

// Throws std::runtime_error naming `what` unless r is VK_SUCCESS.
void check(VkResult r, const char* what);

struct Chunk {
    VkBuffer buf = VK_NULL_HANDLE;
    VkDeviceMemory mem = VK_NULL_HANDLE;
    VkDeviceAddress addr = 0;
    size_t size = 0;
    uint8_t* mapped = nullptr;
    bool dedicated = false;
    std::map<size_t, size_t> free;  // offset -> size
};

class Context {
public:
    explicit Context(int device);
    ~Context();
#define LS_X(f) PFN_##f f = nullptr;
    LS_VK_DEVICE_FNS(LS_X)
#undef LS_X
    VkPhysicalDevice phys = VK_NULL_HANDLE;
    VkDevice dev = VK_NULL_HANDLE;
    VkQueue queue = VK_NULL_HANDLE;
    VkCommandPool pool = VK_NULL_HANDLE;
    VkCommandBuffer cmd = VK_NULL_HANDLE;
    VkFence fence = VK_NULL_HANDLE;
    VkPipelineLayout layout = VK_NULL_HANDLE;
    std::string name;
    uint32_t subgroup_size = 0;
    // Subgroup operations the device supports in compute shaders (VK_SUBGROUP_FEATURE_*_BIT;
    // 0 where compute is not among the supported stages) and its shared memory per workgroup.
    uint32_t subgroup_ops = 0;
    uint32_t shared_bytes = 0;
    // Whether mul_mat takes the shared-memory / subgroup variants (mul_mat_sh_*): where the
    // device has the shared memory they need and LOCKSTEP_VK_SUBGROUP=1 asks for them
    // (default: the plain path).
    bool use_shared = false;
    // Whether mul_mat takes the subgroup variant (mul_mat_sg_*) for 1 to 4 activation rows:
    // on GPUs with subgroup shuffles (LOCKSTEP_VK_SUBGROUP=0 never, =1 also on CPU devices).
    bool use_subgroup_dot = false;
    // Lanes that share a 256-element super-block in mul_mat_sgk_* (1, 2, 4 or 8; fewer where
    // the subgroup is smaller): 8, or LOCKSTEP_VK_SGK_LANES, so lavapipe's 8-lane subgroups
    // also run the passes of several super-blocks a 32- or 64-lane GPU subgroup takes.
    uint32_t sgk_lanes = 8;
    // Weight rows per workgroup of the subgroup kernels (64 invocations; the shaders compute
    // the same from the reported size, shaders/mul_mat_sg_rows.glsl).
    uint32_t sg_rows() const { return std::max(1u, 64u / std::max(subgroup_size, 1u)); }
    // Attention's split form (key blocks over workgroups, then a fold pass): -1 where the
    // plan's size rule picks it, 0 never, 1 whenever a query spans two blocks or more
    // (LOCKSTEP_VK_ATTN_SPLIT=0 / 1, for the tests of both forms).
    int attn_split = -1;
    // Attention's query-tile form (shaders/attention_tile.comp) for prompt ubatches: on CPU
    // devices (lavapipe) by default, where it reads each key once per 64 queries; 0 never,
    // 1 on every device (LOCKSTEP_VK_ATTN_TILE=0 / 1, for the tests of both forms).
    bool attn_tile = false;

    // Suballocation of device memory (chunks of kChunkBytes; larger requests get their own).
    Chunk* allocate(size_t bytes, size_t& offset);
    void release(Chunk* c, size_t offset, size_t bytes);
    size_t heap_size() const { return heap_size_; }
    size_t allocated() const { return allocated_; }
    bool host_mapped() const { return host_mapped_; }

    // Host <-> device copies (mapped memory where the device memory is host-visible, a
    // staging buffer otherwise). Where it is not, a small write (a step's inputs: token ids,
    // positions, indices) is only copied into an upload buffer, and its copy command goes
    // into the next graph's command buffer ahead of the dispatches (record_uploads), instead
    // of a submit and a wait of its own; a read, a fill, a large write or a release submits
    // what is pending first (flush_uploads), so every copy lands in the order it was asked.
    void write(Chunk* c, size_t off, const void* src, size_t n);
    void record_uploads();  // into `cmd`, being recorded: the pending copies and a barrier
    void uploads_done();    // after that command buffer has run
    void flush_uploads();   // the pending copies in a submit of their own
    // Likewise for reads: a graph's outputs (the logits) are copied into a read-back buffer
    // at the end of its command buffer (record_readback: each (chunk, offset, bytes)), and a
    // read of bytes among them is served from there (read_staged) until the next graph or
    // any write, fill or release: a step's logits without a submit of their own.
    struct Span {
        Chunk* c;
        size_t off, n;
    };
    void record_readback(const std::vector<Span>& spans);
    bool read_staged(const Chunk* c, size_t off, void* dst, size_t n);
    void readback_done() { rb_valid_ = !rb_.empty(); }  // the buffer that copies them has run
    void drop_readback() { rb_valid_ = false, rb_.clear(); }  // device memory is about to change
    void read(Chunk* c, size_t off, void* dst, size_t n);
    void fill(Chunk* c, size_t off, size_t n, uint8_t v);

    VkPipeline pipeline(const std::string& variant);
    // Submits `cmd` (already ended) and waits for it.
    void submit_and_wait();

    // GPU timestamps (LOCKSTEP_PROFILE, LOCKSTEP_VK_VERBOSE): whether the queue has them,
    // and the query pool, grown to at least n queries (call outside a recording).
    bool has_timestamps() const { return ts_period_ns_ > 0; }
    VkQueryPool timestamps(uint32_t n);
    // Queries [0, n) of the pool, in seconds after query 0 (they must have been written).
    std::vector<double> timestamp_seconds(uint32_t n);

private:
    double ts_period_ns_ = 0;  // 0: the queue family writes no timestamps
    uint64_t ts_mask_ = 0;
    VkQueryPool ts_pool_ = VK_NULL_HANDLE;
    uint32_t ts_size_ = 0;

public:

private:
    Chunk* new_chunk(size_t bytes, bool dedicated);
    VkPipeline make_pipeline(const std::string& variant);
    void destroy_chunk(Chunk* c);
    void staging_copy(Chunk* c, size_t off, size_t n, bool to_device, uint8_t* host);
    uint32_t mem_type_ = 0;
    bool host_mapped_ = false;
    size_t heap_size_ = 0, allocated_ = 0;
    std::vector<std::unique_ptr<Chunk>> chunks_;
    std::unique_ptr<Chunk> staging_, upload_;
    uint32_t staging_type_ = 0;
    struct PendingCopy {
        VkBuffer dst;
        VkBufferCopy region;
    };
    std::vector<PendingCopy> pending_;
    size_t upload_used_ = 0;
    std::unique_ptr<Chunk> readback_;
    struct Staged {
        const Chunk* c;
        size_t off, n, at;  // bytes [off, off + n) of c, at `at` in readback_
    };
    std::vector<Staged> rb_;
    bool rb_valid_ = false;
    std::unique_ptr<Chunk> host_chunk(size_t bytes, const char* what);
    std::unordered_map<std::string, VkPipeline> pipelines_;
};

}  // namespace ls::vk
