#include "backends/vulkan/vk_context.h"

#include <dlfcn.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
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

    // Memory: device-local for tensors; when that memory is also host-visible (integrated
    // GPUs, lavapipe, resizable BAR) it is mapped and copies are plain memcpy.
    VkPhysicalDeviceMemoryProperties mp;
    L.vkGetPhysicalDeviceMemoryProperties(phys, &mp);
    int best = -1, local = -1, host = -1;
    for (uint32_t i = 0; i < mp.memoryTypeCount; ++i) {
        const auto fl = mp.memoryTypes[i].propertyFlags;
        const bool is_local = fl & VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT;
        const bool visible = (fl & VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT) && (fl & VK_MEMORY_PROPERTY_HOST_COHERENT_BIT);
        if (visible && host < 0) host = int(i);
        if (is_local && local < 0) local = int(i);
        if (is_local && visible && best < 0) best = int(i);
    }
    // A host-visible device-local type counts only when it is the device's main heap (not
    // a small BAR window).
    if (best >= 0 && local >= 0 && mp.memoryTypes[best].heapIndex == mp.memoryTypes[local].heapIndex) host_mapped_ = true;
    else best = local;
    if (best < 0) best = host;
    if (best < 0 || host < 0) throw std::runtime_error("vulkan: " + name + " has no usable memory type");
    mem_type_ = uint32_t(best);
    staging_type_ = uint32_t(host);
    heap_size_ = mp.memoryHeaps[mp.memoryTypes[best].heapIndex].size;
    probe_fma();
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
    VkPipeline p = make_pipeline(variant, native_fma);
    pipelines_[variant] = p;
    return p;
}

VkPipeline Context::make_pipeline(const std::string& variant, bool fused) {
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
    // constant_id 0: NATIVE_FMA (a 32-bit VkBool32); ignored by shaders that do not use it.
    const VkBool32 spec_fma = fused ? VK_TRUE : VK_FALSE;
    const VkSpecializationMapEntry entry{0, 0, sizeof(VkBool32)};
    VkSpecializationInfo si{1, &entry, sizeof(spec_fma), &spec_fma};
    cpi.stage.pSpecializationInfo = &si;
    cpi.layout = layout;
    VkPipeline p;
    const VkResult r = vkCreateComputePipelines(dev, VK_NULL_HANDLE, 1, &cpi, nullptr, &p);
    vkDestroyShaderModule(dev, mod, nullptr);
    check(r, ("vkCreateComputePipelines (" + variant + ")").c_str());
    return p;
}

// Runs shaders/fma_probe.comp with NATIVE_FMA set (the device's own fma()) on triples where a
// fused and an unfused fma differ, plus edge cases, and compares each result with std::fma
// bit for bit. Only a device that gets every one right runs the shaders with native fma.
void Context::probe_fma() {
    auto f = [](uint32_t b) { float x; std::memcpy(&x, &b, 4); return x; };
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
    add(f(0x7f7fffffu), 2.0f, -f(0x7f7fffffu));       // product overflows float: fused inf
    add(f(0x5f800000u), f(0x5f800000u), -f(0x7f7fffffu));  // 2^64 * 2^64 - max: fused finite
    add(f(0x7f800000u), 0.0f, 1.0f);                  // inf * 0: NaN
    add(f(0x7f800000u), 1.0f, -f(0x7f800000u));       // inf - inf: NaN
    add(3.0f, f(0x7fc00000u), 1.0f);                  // NaN propagates
    add(f(0x7f800000u), 2.0f, 1.0f);                  // inf
    uint32_t s = 0x12345678u;
    auto rnd = [&]() { s = s * 1664525u + 1013904223u; return s; };
    for (int i = 0; i < 240; ++i) {  // random operands with cancellation: c near -a*b
        const float a = f((rnd() & 0x807fffffu) | ((rnd() % 40u + 107u) << 23));
        const float b = f((rnd() & 0x807fffffu) | ((rnd() % 40u + 107u) << 23));
        const float c = -(a * b) * (1.0f + float(int(rnd() % 64u) - 32) * e23);
        add(a, b, c);
    }
    const uint32_t n = uint32_t(in.size() / 3);
    std::vector<float> out(n);
    size_t off = 0;
    const size_t bytes = (in.size() + n) * 4;
    Chunk* c = allocate(bytes, off);
    bool ok = true;
    std::string why;
    try {
        write(c, off, in.data(), in.size() * 4);
        VkPipeline p = make_pipeline("fma_probe", true);
        VkCommandBufferBeginInfo bi{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
        bi.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
        check(vkBeginCommandBuffer(cmd, &bi), "vkBeginCommandBuffer");
        struct {
            uint64_t in, out;
            uint32_t n, pad;
        } pc{c->addr + off, c->addr + off + in.size() * 4, n, 0};
        vkCmdBindPipeline(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, p);
        vkCmdPushConstants(cmd, layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, sizeof(pc), &pc);
        vkCmdDispatch(cmd, (n + 63) / 64, 1, 1);
        check(vkEndCommandBuffer(cmd), "vkEndCommandBuffer");
        submit_and_wait();
        vkDestroyPipeline(dev, p, nullptr);
        read(c, off + in.size() * 4, out.data(), n * 4);
        uint32_t bad = 0;
        for (uint32_t i = 0; i < n; ++i) {
            const float want = std::fma(in[3 * i], in[3 * i + 1], in[3 * i + 2]);
            uint32_t wb, gb;
            std::memcpy(&wb, &want, 4);
            std::memcpy(&gb, &out[i], 4);
            const bool nan_ok = std::isnan(want) && std::isnan(out[i]);  // NaN payloads may differ
            if (wb != gb && !nan_ok) {
                if (bad++ == 0) {
                    char buf[160];
                    std::snprintf(buf, sizeof buf, "case %u: fma(%a, %a, %a) = %a, fused %a", i, in[3 * i], in[3 * i + 1],
                                  in[3 * i + 2], out[i], want);
                    why = buf;
                }
            }
        }
        ok = bad == 0;
        if (!ok) why = std::to_string(bad) + "/" + std::to_string(n) + " cases not fused (first " + why + ")";
    } catch (const std::exception& e) {
        ok = false;
        why = std::string("probe failed: ") + e.what();
    }
    release(c, off, bytes);
    native_fma = ok;
    fma_probe = ok ? "fma fused (" + std::to_string(n) + " probe cases): native fma" : why + ": fma emulated";
    if (const char* v = std::getenv("LOCKSTEP_VK_FMA")) {
        if (std::string(v) == "native") native_fma = true, fma_probe += "; LOCKSTEP_VK_FMA=native forces native";
        else if (std::string(v) == "emulated") native_fma = false, fma_probe += "; LOCKSTEP_VK_FMA=emulated forces emulation";
    }
    if (std::getenv("LOCKSTEP_VK_VERBOSE")) std::fprintf(stderr, "vulkan: %s: %s\n", name.c_str(), fma_probe.c_str());
}

}  // namespace ls::vk
