#include "backends/vulkan/vk_context.h"

#include <dlfcn.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <stdexcept>

#include "backends/vulkan/shader_blobs.h"
#include "shaders/push.h"

namespace ls::vk {
namespace {

constexpr size_t kChunkBytes = size_t(256) << 20;
constexpr size_t kAlign = 256;
constexpr size_t kStagingBytes = size_t(64) << 20;

void check(VkResult r, const char* what) {
    if (r != VK_SUCCESS) throw std::runtime_error(std::string("vulkan: ") + what + " failed (VkResult " + std::to_string(int(r)) + ")");
}
std::string mib(size_t b) { return std::to_string((b + (1 << 19)) >> 20) + " MiB"; }

// What the shaders need: buffer device addresses, 64-bit integers and doubles (exact sums),
// 8/16-bit storage (block formats read in place).
bool usable(Loader& L, VkPhysicalDevice pd) {
    VkPhysicalDeviceProperties props;
    L.vkGetPhysicalDeviceProperties(pd, &props);
    if (props.apiVersion < VK_API_VERSION_1_2) return false;
    VkPhysicalDeviceVulkan12Features f12{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES};
    VkPhysicalDeviceVulkan11Features f11{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES};
    f11.pNext = &f12;
    VkPhysicalDeviceFeatures2 f{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
    f.pNext = &f11;
    L.vkGetPhysicalDeviceFeatures2(pd, &f);
    uint32_t nq = 0;
    L.vkGetPhysicalDeviceQueueFamilyProperties(pd, &nq, nullptr);
    std::vector<VkQueueFamilyProperties> q(nq);
    L.vkGetPhysicalDeviceQueueFamilyProperties(pd, &nq, q.data());
    bool compute = false;
    for (auto& qf : q) compute |= (qf.queueFlags & VK_QUEUE_COMPUTE_BIT) != 0;
    return compute && f12.bufferDeviceAddress && f.features.shaderInt64 && f.features.shaderFloat64 && f12.shaderInt8 &&
           f12.storageBuffer8BitAccess && f11.storageBuffer16BitAccess;
}

}  // namespace

Loader& loader() {
    static Loader L;
    static std::once_flag once;
    std::call_once(once, [] {
        for (const char* n : {"libvulkan.so.1", "libvulkan.so"})
            if ((L.lib = dlopen(n, RTLD_NOW | RTLD_LOCAL))) break;
        if (!L.lib) { L.error = "no Vulkan loader (libvulkan.so.1) on this machine"; return; }
        L.vkGetInstanceProcAddr = reinterpret_cast<PFN_vkGetInstanceProcAddr>(dlsym(L.lib, "vkGetInstanceProcAddr"));
        if (!L.vkGetInstanceProcAddr) { L.error = "the Vulkan loader lacks vkGetInstanceProcAddr"; return; }
        L.vkCreateInstance = reinterpret_cast<PFN_vkCreateInstance>(L.vkGetInstanceProcAddr(nullptr, "vkCreateInstance"));
        VkApplicationInfo app{VK_STRUCTURE_TYPE_APPLICATION_INFO};
        app.pApplicationName = "lockstep";
        app.apiVersion = VK_API_VERSION_1_2;
        VkInstanceCreateInfo ci{VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO};
        ci.pApplicationInfo = &app;
        if (!L.vkCreateInstance || L.vkCreateInstance(&ci, nullptr, &L.instance) != VK_SUCCESS) {
            L.error = "vkCreateInstance failed (no Vulkan 1.2 driver installed?)";
            return;
        }
#define LS_X(f) L.f = reinterpret_cast<PFN_##f>(L.vkGetInstanceProcAddr(L.instance, #f));
        LS_VK_INSTANCE_FNS(LS_X)
#undef LS_X
        uint32_t n = 0;
        L.vkEnumeratePhysicalDevices(L.instance, &n, nullptr);
        std::vector<VkPhysicalDevice> all(n);
        L.vkEnumeratePhysicalDevices(L.instance, &n, all.data());
        for (VkPhysicalDevice pd : all)
            if (usable(L, pd)) L.usable.push_back(pd);
        if (L.usable.empty())
            L.error = n ? "no Vulkan device has what the shaders need (Vulkan 1.2, buffer device address, int64, "
                          "float64, 8/16-bit storage)"
                        : "the Vulkan loader reports no device";
    });
    return L;
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
    }

    uint32_t nq = 0;
    L.vkGetPhysicalDeviceQueueFamilyProperties(phys, &nq, nullptr);
    std::vector<VkQueueFamilyProperties> qf(nq);
    L.vkGetPhysicalDeviceQueueFamilyProperties(phys, &nq, qf.data());
    uint32_t family = 0;
    for (uint32_t i = 0; i < nq; ++i)
        if (qf[i].queueFlags & VK_QUEUE_COMPUTE_BIT) { family = i; break; }
    const float prio = 1.0f;
    VkDeviceQueueCreateInfo qci{VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO};
    qci.queueFamilyIndex = family;
    qci.queueCount = 1;
    qci.pQueuePriorities = &prio;
    VkPhysicalDeviceVulkan12Features f12{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES};
    f12.bufferDeviceAddress = VK_TRUE;
    f12.shaderInt8 = VK_TRUE;
    f12.storageBuffer8BitAccess = VK_TRUE;
    VkPhysicalDeviceVulkan11Features f11{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES};
    f11.storageBuffer16BitAccess = VK_TRUE;
    f11.pNext = &f12;
    VkPhysicalDeviceFeatures2 f{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
    f.features.shaderInt64 = VK_TRUE;
    f.features.shaderFloat64 = VK_TRUE;
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
    if (best < 0) best = host;
    if (host_cached >= 0) host = host_cached;  // staging: read back often (logits), so cached
    if (best < 0 || host < 0) throw std::runtime_error("vulkan: " + name + " has no usable memory type");
    mem_type_ = uint32_t(best);
    staging_type_ = uint32_t(host);
    heap_size_ = mp.memoryHeaps[mp.memoryTypes[best].heapIndex].size;
    probe_native();
}

Context::~Context() {
    if (!dev) return;
    vkDeviceWaitIdle(dev);
    for (auto& [n, p] : pipelines_) vkDestroyPipeline(dev, p, nullptr);
    for (auto& c : chunks_) destroy_chunk(c.get());
    if (staging_) destroy_chunk(staging_.get());
    vkDestroyPipelineLayout(dev, layout, nullptr);
    vkDestroyFence(dev, fence, nullptr);
    vkDestroyCommandPool(dev, pool, nullptr);
    vkDestroyDevice(dev, nullptr);
}

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

void Context::submit_and_wait() {
    VkSubmitInfo si{VK_STRUCTURE_TYPE_SUBMIT_INFO};
    si.commandBufferCount = 1;
    si.pCommandBuffers = &cmd;
    check(vkQueueSubmit(queue, 1, &si, fence), "vkQueueSubmit");
    check(vkWaitForFences(dev, 1, &fence, VK_TRUE, UINT64_MAX), "vkWaitForFences");
    check(vkResetFences(dev, 1, &fence), "vkResetFences");
}

void Context::staging_copy(Chunk* c, size_t off, size_t n, bool to_device, uint8_t* host) {
    if (!staging_) {
        // A host-visible chunk used only for copies.
        auto s = std::make_unique<Chunk>();
        VkBufferCreateInfo bci{VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO};
        bci.size = kStagingBytes;
        bci.usage = VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT;
        check(vkCreateBuffer(dev, &bci, nullptr, &s->buf), "vkCreateBuffer");
        VkMemoryRequirements req;
        vkGetBufferMemoryRequirements(dev, s->buf, &req);
        VkMemoryAllocateInfo mai{VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO};
        mai.allocationSize = req.size;
        mai.memoryTypeIndex = staging_type_;
        check(vkAllocateMemory(dev, &mai, nullptr, &s->mem), "vkAllocateMemory (staging)");
        check(vkBindBufferMemory(dev, s->buf, s->mem, 0), "vkBindBufferMemory");
        void* p = nullptr;
        check(vkMapMemory(dev, s->mem, 0, VK_WHOLE_SIZE, 0, &p), "vkMapMemory");
        s->mapped = static_cast<uint8_t*>(p);
        staging_ = std::move(s);
    }
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
    if (c->mapped) std::memcpy(c->mapped + off, src, n);
    else staging_copy(c, off, n, true, static_cast<uint8_t*>(const_cast<void*>(src)));
}

void Context::read(Chunk* c, size_t off, void* dst, size_t n) {
    if (c->mapped) std::memcpy(dst, c->mapped + off, n);
    else staging_copy(c, off, n, false, static_cast<uint8_t*>(dst));
}

void Context::fill(Chunk* c, size_t off, size_t n, uint8_t v) {
    if (c->mapped) { std::memset(c->mapped + off, v, n); return; }
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

VkPipeline Context::pipeline(const std::string& variant) {
    if (auto it = pipelines_.find(variant); it != pipelines_.end()) return it->second;
    VkPipeline p = make_pipeline(variant, native_fma, native_d2f);
    pipelines_[variant] = p;
    return p;
}

VkPipeline Context::make_pipeline(const std::string& variant, bool fused, bool d2f) {
    const ShaderBlob* blob = nullptr;
    for (size_t i = 0; i < kShaderBlobCount; ++i)
        if (variant == kShaderBlobs[i].name) blob = &kShaderBlobs[i];
    if (!blob) throw std::logic_error("vulkan: no shader variant '" + variant + "' in this build");
    VkShaderModuleCreateInfo smi{VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO};
    smi.codeSize = blob->n_words * 4;
    smi.pCode = blob->words;
    VkShaderModule mod;
    check(vkCreateShaderModule(dev, &smi, nullptr, &mod), "vkCreateShaderModule");
    VkComputePipelineCreateInfo cpi{VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO};
    cpi.stage = {VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO};
    cpi.stage.stage = VK_SHADER_STAGE_COMPUTE_BIT;
    cpi.stage.module = mod;
    cpi.stage.pName = "main";
    // constant_id 0: NATIVE_FMA, 1: NATIVE_D2F (32-bit VkBool32s); ignored by shaders that
    // do not use them.
    // 2: SUBGROUP_SIZE, 3: SUBGROUP_OPS (VK_SUBGROUP_FEATURE_* bits), 4: SHARED_BYTES.
    const uint32_t spec[5] = {fused ? VK_TRUE : VK_FALSE, d2f ? VK_TRUE : VK_FALSE, subgroup_size, subgroup_ops, shared_bytes};
    VkSpecializationMapEntry entries[5];
    for (uint32_t i = 0; i < 5; ++i) entries[i] = {i, 4 * i, 4};
    VkSpecializationInfo si{5, entries, sizeof(spec), spec};
    cpi.stage.pSpecializationInfo = &si;
    cpi.layout = layout;
    VkPipeline p;
    const VkResult r = vkCreateComputePipelines(dev, VK_NULL_HANDLE, 1, &cpi, nullptr, &p);
    vkDestroyShaderModule(dev, mod, nullptr);
    check(r, ("vkCreateComputePipelines (" + variant + ")").c_str());
    return p;
}

std::vector<float> Context::run_probe(uint32_t mode, const void* in, size_t in_bytes, uint32_t n) {
    size_t off = 0;
    const size_t bytes = in_bytes + size_t(n) * 4;
    Chunk* c = allocate(bytes, off);
    std::vector<float> out(n);
    try {
        write(c, off, in, in_bytes);
        VkPipeline p = make_pipeline("fma_probe", true, true);
        VkCommandBufferBeginInfo bi{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
        bi.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
        check(vkBeginCommandBuffer(cmd, &bi), "vkBeginCommandBuffer");
        struct {
            uint64_t in, out;
            uint32_t n, mode;
        } pc{c->addr + off, c->addr + off + in_bytes, n, mode};
        vkCmdBindPipeline(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, p);
        vkCmdPushConstants(cmd, layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, sizeof(pc), &pc);
        vkCmdDispatch(cmd, (n + 63) / 64, 1, 1);
        check(vkEndCommandBuffer(cmd), "vkEndCommandBuffer");
        submit_and_wait();
        vkDestroyPipeline(dev, p, nullptr);
        read(c, off + in_bytes, out.data(), size_t(n) * 4);
    } catch (...) {
        release(c, off, bytes);
        throw;
    }
    release(c, off, bytes);
    return out;
}

namespace {
float bits_f(uint32_t b) { float x; std::memcpy(&x, &b, 4); return x; }
uint32_t f_bits(float x) { uint32_t b; std::memcpy(&b, &x, 4); return b; }
double bits_d(uint64_t b) { double x; std::memcpy(&x, &b, 8); return x; }
// Compares a probe's results with the host's (bit for bit; any NaN matches any NaN) and says
// how it went.
bool judge(const std::vector<float>& got, const std::vector<float>& want, const std::function<std::string(size_t)>& what,
           std::string& report) {
    size_t bad = 0, first = 0;
    for (size_t i = 0; i < want.size(); ++i)
        if (f_bits(got[i]) != f_bits(want[i]) && !(std::isnan(got[i]) && std::isnan(want[i])))
            if (bad++ == 0) first = i;
    if (bad == 0) {
        report = "all " + std::to_string(want.size()) + " probe cases exact";
        return true;
    }
    char buf[64];
    std::snprintf(buf, sizeof buf, " = %a, want %a", got[first], want[first]);
    report = std::to_string(bad) + "/" + std::to_string(want.size()) + " probe cases wrong (first: " + what(first) + buf + ")";
    return false;
}
}  // namespace

// The native-math probes: shaders/fma_probe.comp with the native paths on, on inputs where
// the native and the emulated forms differ when the device's operation is not the IEEE one
// (fused vs unfused fma; double -> float rounding: ties, subnormals, overflow), plus edge
// cases, compared with the host bit for bit. A device that gets every case right runs the
// shaders with the native form; any other keeps the emulation.
void Context::probe_native() {
    auto f = bits_f;
    // fma
    std::vector<float> in;
    auto add = [&](float a, float b, float c) { in.insert(in.end(), {a, b, c}); };
    const float e23 = f(0x34000000u);  // 2^-23
    add(1.0f + e23, 1.0f + e23, -(1.0f + 2 * e23));   // fused 2^-46, unfused 0
    add(1.0f + e23, 1.0f - e23, -1.0f);               // fused -2^-46, unfused 0
    add(f(0x3f800001u), f(0x3f7ffffeu), -f(0x3f7fffffu));
    add(f(0x00800000u), 0.5f, 0.0f);                  // subnormal result
    add(f(0x00800001u), f(0x3f000001u), -f(0x00400000u));  // subnormal, product not exact in float
    add(f(0x00000001u), 0.5f, 0.0f);                  // halfway below the smallest subnormal
    add(f(0x00000003u), 0.5f, -0.0f);
    add(-0.0f, 1.0f, 0.0f);                           // +0
    add(-0.0f, 1.0f, -0.0f);                          // -0
    add(1.0f, -1.0f, 1.0f);                           // exact cancellation: +0
    add(f(0x7f7fffffu), 2.0f, -f(0x7f7fffffu));       // product overflows float: fused finite
    add(f(0x5f800000u), f(0x5f800000u), -f(0x7f7fffffu));  // 2^64 * 2^64 - max
    add(f(0x7f800000u), 0.0f, 1.0f);                  // inf * 0: NaN
    add(f(0x7f800000u), 1.0f, -f(0x7f800000u));       // inf - inf: NaN
    add(3.0f, f(0x7fc00000u), 1.0f);                  // NaN propagates
    add(f(0x7f800000u), 2.0f, 1.0f);                  // inf
    uint32_t s = 0x12345678u;
    auto rnd = [&]() { s = s * 1664525u + 1013904223u; return s >> 3; };
    for (int i = 0; i < 240; ++i) {  // random operands with cancellation: c near -a*b
        const float a = f((rnd() & 0x007fffffu) | ((rnd() & 1u) << 31) | ((rnd() % 40u + 107u) << 23));
        const float b = f((rnd() & 0x007fffffu) | ((rnd() & 1u) << 31) | ((rnd() % 40u + 107u) << 23));
        const float c = -(a * b) * (1.0f + float(int(rnd() % 64u) - 32) * e23);
        add(a, b, c);
    }
    const uint32_t nf = uint32_t(in.size() / 3);
    std::vector<float> want(nf);
    for (uint32_t i = 0; i < nf; ++i) want[i] = std::fma(in[3 * i], in[3 * i + 1], in[3 * i + 2]);
    std::string fma_rep, d2f_rep;
    try {
        native_fma = judge(run_probe(0, in.data(), in.size() * 4, nf), want, [&](size_t i) {
            char buf[96];
            std::snprintf(buf, sizeof buf, "fma(%a, %a, %a)", in[3 * i], in[3 * i + 1], in[3 * i + 2]);
            return std::string(buf);
        }, fma_rep);
    } catch (const std::exception& e) {
        native_fma = false;
        fma_rep = std::string("probe failed: ") + e.what();
    }
    // double -> float
    std::vector<double> din;
    for (uint64_t fb : {0x3f800000ull, 0x3f800001ull, 0x00000001ull, 0x00000002ull, 0x00000003ull, 0x007fffffull,
                        0x00800000ull, 0x7f7ffffeull, 0x7f7fffffull}) {
        const double lo = double(f(uint32_t(fb))), hi = double(std::nextafter(f(uint32_t(fb)), INFINITY));
        const double mid = (lo + hi) * 0.5;  // exact: a tie
        for (double v : {mid, std::nextafter(mid, 0.0), std::nextafter(mid, INFINITY), lo}) {
            din.push_back(v);
            din.push_back(-v);
        }
    }
    for (double v : {0.0, -0.0, double(INFINITY), -double(INFINITY), bits_d(0x7ff8000000000000ull), 1e300, -1e300, 1e-300,
                     -1e-300, 0x1p-150, 0x1p-149 * 0.75, 0x1p128, 0x1.ffffffp127, 0x1.fffffefffffffp127})
        din.push_back(v);
    for (int i = 0; i < 400; ++i) {  // random mantissas over the float range and beyond
        const uint64_t m = (uint64_t(rnd()) << 24 ^ rnd()) & 0xFFFFFFFFFFFFFull;
        const uint64_t e = 1023 - 160 + rnd() % 300;
        din.push_back(bits_d((uint64_t(rnd() & 1u) << 63) | (e << 52) | m));
    }
    const uint32_t nd = uint32_t(din.size());
    std::vector<float> dwant(nd);
    for (uint32_t i = 0; i < nd; ++i) dwant[i] = float(din[i]);
    try {
        native_d2f = judge(run_probe(1, din.data(), din.size() * 8, nd), dwant, [&](size_t i) {
            char buf[64];
            std::snprintf(buf, sizeof buf, "float(%a)", din[i]);
            return std::string(buf);
        }, d2f_rep);
    } catch (const std::exception& e) {
        native_d2f = false;
        d2f_rep = std::string("probe failed: ") + e.what();
    }
    auto over = [](const char* env, bool& flag, std::string& rep) {
        if (const char* v = std::getenv(env)) {
            if (std::string(v) == "native") flag = true, rep += "; " + std::string(env) + "=native forces native";
            else if (std::string(v) == "emulated") flag = false, rep += "; " + std::string(env) + "=emulated forces emulation";
        }
    };
    fma_rep = "fma: " + fma_rep + (native_fma ? ": native" : ": emulated");
    d2f_rep = "double->float: " + d2f_rep + (native_d2f ? ": native" : ": emulated");
    over("LOCKSTEP_VK_FMA", native_fma, fma_rep);
    over("LOCKSTEP_VK_D2F", native_d2f, d2f_rep);
    probe_report = fma_rep + "; " + d2f_rep;
    if (std::getenv("LOCKSTEP_VK_VERBOSE")) std::fprintf(stderr, "vulkan: %s: %s; memory %s\n", name.c_str(), probe_report.c_str(), host_mapped_ ? "mapped (device-local, host-cached)" : "device-local, copies through a staging buffer");
}

}  // namespace ls::vk
