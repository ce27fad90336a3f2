// The Vulkan loader, opened with dlopen so a machine without one gets an error, not a binary
// that fails to start; the instance, and the devices that can run the shaders.
#include "backends/vulkan/vk_context.h"

#include <dlfcn.h>

#include <mutex>
#include <string>
#include <vector>

namespace ls::vk {

std::vector<std::string> missing_requirements(Loader& L, VkPhysicalDevice pd) {
    std::vector<std::string> miss;
    VkPhysicalDeviceProperties props;
    L.vkGetPhysicalDeviceProperties(pd, &props);
    if (props.apiVersion < VK_API_VERSION_1_2) {
        miss.push_back("Vulkan 1.2 (has " + std::to_string(VK_API_VERSION_MAJOR(props.apiVersion)) + "." +
                       std::to_string(VK_API_VERSION_MINOR(props.apiVersion)) + ")");
        return miss;  // the 1.1 / 1.2 feature structures cannot be asked for
    }
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
    if (!compute) miss.push_back("a compute queue");
    if (!f12.bufferDeviceAddress) miss.push_back("bufferDeviceAddress");
    if (!f12.storageBuffer8BitAccess) miss.push_back("storageBuffer8BitAccess");
    if (!f11.storageBuffer16BitAccess) miss.push_back("storageBuffer16BitAccess");
    return miss;
}

std::vector<DeviceReport> device_reports() {
    std::vector<DeviceReport> out;
    Loader& L = loader();
    if (!L.instance) return out;
    uint32_t n = 0;
    L.vkEnumeratePhysicalDevices(L.instance, &n, nullptr);
    std::vector<VkPhysicalDevice> all(n);
    L.vkEnumeratePhysicalDevices(L.instance, &n, all.data());
    for (VkPhysicalDevice pd : all) {
        VkPhysicalDeviceProperties props;
        L.vkGetPhysicalDeviceProperties(pd, &props);
        const char* types[] = {"other", "integrated GPU", "discrete GPU", "virtual GPU", "CPU"};
        out.push_back({props.deviceName, props.deviceType <= 4 ? types[props.deviceType] : "other", missing_requirements(L, pd)});
    }
    return out;
}

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
            if (missing_requirements(L, pd).empty()) L.usable.push_back(pd);
        if (L.usable.empty())
            L.error = n ? "no Vulkan device has what the shaders need (`lockstep devices` says what each one lacks)"
                        : "the Vulkan loader reports no device";
    });
    return L;
}
}  // namespace ls::vk
