#include "backends/registry.h"

#include <stdexcept>
#include <thread>

#include "core/ref/ref_backend.h"
#include "cpu/cpu_backend.h"
#if LOCKSTEP_HAVE_CUDA
#include "backends/cuda/cuda_backend.h"  // cuda
#endif
#ifdef LOCKSTEP_HAVE_VULKAN
#include "backends/vulkan/vulkan_backend.h"
#endif

namespace ls {

std::vector<std::string> backend_names() { return {"cpu", "vulkan", "cuda", "reference"}; }

bool backend_built(const std::string& name) {
#if LOCKSTEP_HAVE_CUDA
    if (name == "cuda") return true;
#endif
#ifdef LOCKSTEP_HAVE_VULKAN
    if (name == "vulkan") return true;
#endif
    return name == "cpu" || name == "reference";
}

int backend_device_count(const std::string& name) {
#if LOCKSTEP_HAVE_CUDA
    if (name == "cuda") return cuda_device_count();
#endif
#ifdef LOCKSTEP_HAVE_VULKAN
    if (name == "vulkan") return int(vulkan_devices().size());
#endif
    return backend_built(name) ? 1 : 0;
}

std::vector<DeviceInfo> list_devices() {
    std::vector<DeviceInfo> v;
    DeviceInfo cpu;
    cpu.backend = "cpu";
    cpu.name = "host CPU";
    cpu.features = std::to_string(std::thread::hardware_concurrency()) + " threads";
    v.push_back(cpu);
#if LOCKSTEP_HAVE_CUDA
    for (DeviceInfo& d : cuda_list_devices()) v.push_back(d);
#endif
#ifdef LOCKSTEP_HAVE_VULKAN
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
#endif
    return v;
}

std::vector<RefusedDevice> refused_devices() {
    std::vector<RefusedDevice> v;
#ifdef LOCKSTEP_HAVE_VULKAN
    for (const auto& [name, why] : vulkan_refused_devices()) v.push_back({"vulkan", name, why});
#endif
    return v;
}

std::string backend_requirements(const std::string& name) {
#ifdef LOCKSTEP_HAVE_VULKAN
    if (name == "vulkan") return vulkan_requirements();
#endif
    (void)name;
    return "";
}

std::unique_ptr<Backend> create_backend(const BackendOptions& o) {
    if (o.device < 0) throw std::runtime_error("--device must be >= 0, got " + std::to_string(o.device));
    if (o.name == "cpu" || o.name == "reference") {
        if (o.device != 0)
            throw std::runtime_error("the " + o.name + " backend has one device (0); --device " + std::to_string(o.device) + " does not exist");
        if (o.name == "reference") return make_reference_backend();
        return make_cpu_backend(o.threads, o.cpu_single_sequence_scan);
    }
#if LOCKSTEP_HAVE_CUDA
    if (o.name == "cuda") return make_cuda_backend(o.device);
#endif
#ifdef LOCKSTEP_HAVE_VULKAN
    if (o.name == "vulkan") return make_vulkan_backend(o.device);
#endif
    if (o.name == "vulkan" || o.name == "cuda")
        throw std::runtime_error("this build of lockstep has no " + o.name + " backend yet; use --backend cpu");
    throw std::runtime_error("unknown backend '" + o.name + "' (choose cpu, vulkan or cuda)");
}

}  // namespace ls
