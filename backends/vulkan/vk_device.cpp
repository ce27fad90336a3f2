// The device of one Context: its queue, command buffer, fence, pipeline layout, the
// memory types it uses, and which mul_mat variants it takes.
#include "backends/vulkan/vk_context.h"

#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <vector>

namespace ls::vk {

void check(VkResult r, const char* what) {
    if (r != VK_SUCCESS) throw std::runtime_error(std::string("vulkan: ") + what + " failed (VkResult " + std::to_string(int(r)) + ")");
}

Context::Context(int device) {
    Loader& L = loader();
    if (L.usable.empty()) throw std::runtime_error("vulkan: " + L.error);
    if (device < 0 || device >= int(L.usable.size()))
        throw std::runtime_error("vulkan: --device " + std::to_string(device) + " does not exist (" +
                                 std::to_string(L.usable.size()) + " usable device(s); see `lockstep devices`)");
    phys = L.usable[device];
    VkPhysicalDeviceSubgroupProperties sub{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES};
    VkPhysicalDeviceProperties2 props{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2};
    props.pNext = &sub;
    L.vkGetPhysicalDeviceProperties2(phys, &props);
    name = props.properties.deviceName;
    subgroup_size = sub.subgroupSize;
    subgroup_ops = (sub.supportedStages & VK_SHADER_STAGE_COMPUTE_BIT) ? sub.supportedOperations : 0u;
    shared_bytes = props.properties.limits.maxComputeSharedMemorySize;
    {
        // mul_mat_sh_*: 8 rows x 16 blocks x (8 quant words + 2 scales) of 4 bytes
        const char* e = std::getenv("LOCKSTEP_VK_SUBGROUP");
        // Off by default: on lavapipe it measured no faster than the plain path (bench pp64
        // 2.05 vs 2.47 t/s, noisy); LOCKSTEP_VK_SUBGROUP=1 turns it on, =0 keeps it off.
        const bool on = e && std::string(e) == "1";
        use_shared = on && shared_bytes >= 8u * 16u * 10u * 4u;
        // The subgroup decode variant (mul_mat_sg_*) on GPUs with shuffles in compute shaders.
        // Not on CPU devices (lavapipe): there a subgroup is SIMD lanes of one thread and the
        // shuffles cost more than they save (bench tg4 0.67 vs 1.32 t/s). LOCKSTEP_VK_SUBGROUP=1
        // turns it on anyway (the op tests run it that way on lavapipe), =0 turns it off.
        const uint32_t need = VK_SUBGROUP_FEATURE_BASIC_BIT | VK_SUBGROUP_FEATURE_SHUFFLE_BIT;
        const bool cpu_device = props.properties.deviceType == VK_PHYSICAL_DEVICE_TYPE_CPU;
        use_subgroup_dot = (subgroup_ops & need) == need && subgroup_size >= 1 && (on || (!e && !cpu_device));
        if (const char* l = std::getenv("LOCKSTEP_VK_SGK_LANES")) {
            const std::string v = l;
            if (v != "1" && v != "2" && v != "4" && v != "8")
                throw std::runtime_error("vulkan: LOCKSTEP_VK_SGK_LANES must be 1, 2, 4 or 8 (got '" + v + "')");
            sgk_lanes = uint32_t(std::stoul(v));
        }
    }

    uint32_t nq = 0;
    L.vkGetPhysicalDeviceQueueFamilyProperties(phys, &nq, nullptr);
    std::vector<VkQueueFamilyProperties> qf(nq);
    L.vkGetPhysicalDeviceQueueFamilyProperties(phys, &nq, qf.data());
    uint32_t family = 0;
    for (uint32_t i = 0; i < nq; ++i)
        if (qf[i].queueFlags & VK_QUEUE_COMPUTE_BIT) { family = i; break; }
    if (const uint32_t bits = qf[family].timestampValidBits; bits > 0 && props.properties.limits.timestampPeriod > 0) {
        ts_period_ns_ = props.properties.limits.timestampPeriod;
        ts_mask_ = bits >= 64 ? ~uint64_t(0) : (uint64_t(1) << bits) - 1;
    }
    const float prio = 1.0f;
    VkDeviceQueueCreateInfo qci{VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO};
    qci.queueFamilyIndex = family;
    qci.queueCount = 1;
    qci.pQueuePriorities = &prio;
    VkPhysicalDeviceVulkan12Features f12{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES};
    // Exactly the features of missing_requirements (vk_loader.cpp).
    f12.bufferDeviceAddress = VK_TRUE;
    f12.storageBuffer8BitAccess = VK_TRUE;
    VkPhysicalDeviceVulkan11Features f11{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES};
    f11.storageBuffer16BitAccess = VK_TRUE;
    f11.pNext = &f12;
    VkPhysicalDeviceFeatures2 f{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
    f.pNext = &f11;
    VkDeviceCreateInfo dci{VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO};
    dci.pNext = &f;
    dci.queueCreateInfoCount = 1;
    dci.pQueueCreateInfos = &qci;
    check(L.vkCreateDevice(phys, &dci, nullptr, &dev), "vkCreateDevice");
#define LS_X(f) f = reinterpret_cast<PFN_##f>(L.vkGetDeviceProcAddr(dev, #f));
    LS_VK_DEVICE_FNS(LS_X)
#undef LS_X
    vkGetDeviceQueue(dev, family, 0, &queue);

    VkCommandPoolCreateInfo pci{VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO};
    pci.flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT;
    pci.queueFamilyIndex = family;
    check(vkCreateCommandPool(dev, &pci, nullptr, &pool), "vkCreateCommandPool");
    VkCommandBufferAllocateInfo cai{VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
    cai.commandPool = pool;
    cai.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
    cai.commandBufferCount = 1;
    check(vkAllocateCommandBuffers(dev, &cai, &cmd), "vkAllocateCommandBuffers");
    VkFenceCreateInfo fci{VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
    check(vkCreateFence(dev, &fci, nullptr, &fence), "vkCreateFence");
    // One layout for every shader: push constants only (tensors are buffer addresses).
    VkPushConstantRange pcr{VK_SHADER_STAGE_COMPUTE_BIT, 0, 128};
    VkPipelineLayoutCreateInfo lci{VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO};
    lci.pushConstantRangeCount = 1;
    lci.pPushConstantRanges = &pcr;
    check(vkCreatePipelineLayout(dev, &lci, nullptr, &layout), "vkCreatePipelineLayout");

    // Memory: device-local for tensors. When that memory is also host-visible AND host-cached
    // (integrated GPUs, lavapipe) it is mapped and copies are plain memcpy. A discrete GPU's
    // resizable-BAR window is host-visible but uncached: CPU reads through it crawl (on an
    // H100, reading back 1 MB of logits per decode step that way held generation at 27 t/s),
    // so such memory is used unmapped, through a staging buffer.
    VkPhysicalDeviceMemoryProperties mp;
    L.vkGetPhysicalDeviceMemoryProperties(phys, &mp);
    int best = -1, local = -1, host = -1, host_cached = -1;
    for (uint32_t i = 0; i < mp.memoryTypeCount; ++i) {
        const auto fl = mp.memoryTypes[i].propertyFlags;
        const bool is_local = fl & VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT;
        const bool visible = (fl & VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT) && (fl & VK_MEMORY_PROPERTY_HOST_COHERENT_BIT);
        const bool cached = fl & VK_MEMORY_PROPERTY_HOST_CACHED_BIT;
        if (visible && host < 0) host = int(i);
        if (visible && cached && host_cached < 0) host_cached = int(i);
        if (is_local && local < 0) local = int(i);
        if (is_local && visible && cached && best < 0) best = int(i);
    }
    // A host-visible device-local type counts only when it is the device's main heap (not
    // a small BAR window).
    if (best >= 0 && local >= 0 && mp.memoryTypes[best].heapIndex == mp.memoryTypes[local].heapIndex) host_mapped_ = true;
    else best = local;
    // LOCKSTEP_VK_STAGING=1: copies through the staging buffer even where device memory is
    // mapped, so the discrete-GPU path runs on lavapipe too (its tests).
    if (const char* e = std::getenv("LOCKSTEP_VK_STAGING"); e && std::string(e) == "1" && local >= 0) {
        host_mapped_ = false;
        best = local;
    }
    if (best < 0) best = host;
    if (host_cached >= 0) host = host_cached;  // staging: read back often (logits), so cached
    if (best < 0 || host < 0) throw std::runtime_error("vulkan: " + name + " has no usable memory type");
    mem_type_ = uint32_t(best);
    staging_type_ = uint32_t(host);
    heap_size_ = mp.memoryHeaps[mp.memoryTypes[best].heapIndex].size;
    if (const char* e = std::getenv("LOCKSTEP_VK_ATTN_SPLIT")) attn_split = std::string(e) == "1" ? 1 : std::string(e) == "0" ? 0 : -1;
    {
        const char* e = std::getenv("LOCKSTEP_VK_ATTN_TILE");
        attn_tile = e ? std::string(e) == "1" : props.properties.deviceType == VK_PHYSICAL_DEVICE_TYPE_CPU;
    }
    if (std::getenv("LOCKSTEP_VK_VERBOSE"))
        std::fprintf(stderr, "vulkan: %s: subgroup %u, memory %s\n", name.c_str(), subgroup_size,
                     host_mapped_ ? "mapped (device-local, host-cached)" : "device-local, copies through a staging buffer");
}

Context::~Context() {
    if (!dev) return;
    vkDeviceWaitIdle(dev);
    for (auto& [n, p] : pipelines_) vkDestroyPipeline(dev, p, nullptr);
    if (ts_pool_) vkDestroyQueryPool(dev, ts_pool_, nullptr);
    for (auto& c : chunks_) destroy_chunk(c.get());
    if (staging_) destroy_chunk(staging_.get());
    if (upload_) destroy_chunk(upload_.get());
    if (readback_) destroy_chunk(readback_.get());
    vkDestroyPipelineLayout(dev, layout, nullptr);
    vkDestroyFence(dev, fence, nullptr);
    vkDestroyCommandPool(dev, pool, nullptr);
    vkDestroyDevice(dev, nullptr);
}

void Context::submit_and_wait() {
    VkSubmitInfo si{VK_STRUCTURE_TYPE_SUBMIT_INFO};
    si.commandBufferCount = 1;
    si.pCommandBuffers = &cmd;
    check(vkQueueSubmit(queue, 1, &si, fence), "vkQueueSubmit");
    check(vkWaitForFences(dev, 1, &fence, VK_TRUE, UINT64_MAX), "vkWaitForFences");
    check(vkResetFences(dev, 1, &fence), "vkResetFences");
}

VkQueryPool Context::timestamps(uint32_t n) {
    if (!has_timestamps()) return VK_NULL_HANDLE;
    if (n > ts_size_) {
        if (ts_pool_) vkDestroyQueryPool(dev, ts_pool_, nullptr), ts_pool_ = VK_NULL_HANDLE;
        ts_size_ = std::max(n, ts_size_ * 2);
        VkQueryPoolCreateInfo qi{VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO};
        qi.queryType = VK_QUERY_TYPE_TIMESTAMP;
        qi.queryCount = ts_size_;
        check(vkCreateQueryPool(dev, &qi, nullptr, &ts_pool_), "vkCreateQueryPool");
    }
    return ts_pool_;
}

std::vector<double> Context::timestamp_seconds(uint32_t n) {
    std::vector<uint64_t> raw(n);
    std::vector<double> out(n, 0.0);
    if (n == 0 || !ts_pool_) return out;
    check(vkGetQueryPoolResults(dev, ts_pool_, 0, n, n * sizeof(uint64_t), raw.data(), sizeof(uint64_t),
                                VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WAIT_BIT),
          "vkGetQueryPoolResults");
    for (uint32_t i = 0; i < n; ++i) out[i] = double((raw[i] - raw[0]) & ts_mask_) * ts_period_ns_ * 1e-9;
    return out;
}
}  // namespace ls::vk
