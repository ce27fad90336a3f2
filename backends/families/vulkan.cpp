#include "backends/families/families.h"
#include "backends/vulkan/vulkan_backend.h"

namespace ls {

namespace {
std::vector<DeviceInfo> vk_devices() {
    std::vector<DeviceInfo> v;
    int i = 0;
    for (const VulkanDeviceDesc& d : vulkan_devices()) {
        DeviceInfo info;
        info.backend = "vulkan";
        info.index = i++;
        info.name = d.name;
        info.memory_total = d.memory_total;
        info.memory_free = d.memory_free;
        info.features = d.features;
        v.push_back(info);
    }
    return v;
}
std::vector<RefusedDevice> vk_refused() {
    std::vector<RefusedDevice> v;
    for (const auto& [name, why] : vulkan_refused_devices()) v.push_back({"vulkan", name, why});
    return v;
}
std::unique_ptr<Backend> make_vk(const BackendOptions& o) { return make_vulkan_backend(o.device); }
}  // namespace

const BackendFamily kVulkanFamily{"vulkan", true, true, &vk_devices, &vk_refused, &vulkan_requirements, &make_vk};

}  // namespace ls
