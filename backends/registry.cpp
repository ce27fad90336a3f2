#include "backends/registry.h"

#include <cctype>
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

std::string device_names() {
    std::string s = "cpu";
    for (const DeviceInfo& d : list_devices())
        if (d.backend != "cpu") s += ", " + d.backend + std::to_string(d.index);
    return s;
}

NamedDevice parse_device_name(const std::string& raw) {
    std::string n;
    for (char c : raw) n += char(std::tolower(static_cast<unsigned char>(c)));
    NamedDevice d;
    if (n == "cpu") {
        d.backend = "cpu";
        return d;
    }
    size_t i = 0;
    while (i < n.size() && std::isalpha(static_cast<unsigned char>(n[i]))) ++i;
    d.backend = n.substr(0, i);
    const std::string digits = n.substr(i);
    bool ok = (d.backend == "cuda" || d.backend == "vulkan") && !digits.empty() && digits.size() <= 4 &&
              digits.find_first_not_of("0123456789") == std::string::npos;
    if (ok) d.index = std::stoi(digits);
    if (!ok || !backend_built(d.backend) || d.index >= backend_device_count(d.backend))
        throw std::runtime_error("no device '" + raw + "'" +
                                 (ok && !backend_built(d.backend) ? " (this build of lockstep has no " + d.backend + " backend)" : "") +
                                 "; this machine has: " + device_names() + " (lockstep devices lists them)");
    return d;
}

size_t device_memory_free(const NamedDevice& d) {
    if (d.backend == "cpu") return 0;
    // A driver without a memory budget (lavapipe) reports no free figure: then all of it.
    for (const DeviceInfo& i : list_devices())
        if (i.backend == d.backend && i.index == d.index) return i.memory_free ? i.memory_free : i.memory_total;
    return 0;
}

OpenedDevices open_devices(const std::vector<std::string>& names, const std::string& backend, int index, int threads, bool with_cpu) {
    OpenedDevices d;
    auto open = [&](const NamedDevice& n) {
        d.backends.push_back(create_backend({n.backend, n.index, threads}));
        d.desc.push_back({n.name(), device_memory_free(n), n.backend == "cpu"});
    };
    if (names.empty()) {
        if (backend == "reference" || backend == "cpu" || !with_cpu) {
            d.backends.push_back(create_backend({backend, index, threads}));
            d.desc.push_back({backend == "cpu" || backend == "reference" ? backend : backend + std::to_string(index),
                              backend == "cpu" || backend == "reference" ? 0 : device_memory_free({backend, index}),
                              backend == "cpu" || backend == "reference"});
            return d;
        }
        open({"cpu", 0});
        open({backend, index});
        return d;
    }
    std::vector<NamedDevice> gpus;
    for (const std::string& n : names) {
        NamedDevice nd = parse_device_name(n);
        if (nd.backend != "cpu") gpus.push_back(nd);
    }
    open({"cpu", 0});
    for (const NamedDevice& g : gpus) open(g);
    return d;
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
