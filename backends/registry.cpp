#include "backends/registry.h"

#include <stdexcept>
#include <thread>

#include "cpu/cpu_backend.h"

namespace ls {

std::vector<std::string> backend_names() { return {"cpu", "vulkan", "cuda", "reference"}; }

bool backend_built(const std::string& name) { return name == "cpu" || name == "reference"; }

int backend_device_count(const std::string& name) { return backend_built(name) ? 1 : 0; }

std::vector<DeviceInfo> list_devices() {
    std::vector<DeviceInfo> v;
    DeviceInfo cpu;
    cpu.backend = "cpu";
    cpu.name = "host CPU";
    cpu.features = std::to_string(std::thread::hardware_concurrency()) + " threads";
    v.push_back(cpu);
    return v;
}

std::unique_ptr<Backend> create_backend(const BackendOptions& o) {
    if (o.device < 0) throw std::runtime_error("--device must be >= 0, got " + std::to_string(o.device));
    if (o.name == "cpu" || o.name == "reference") {
        if (o.device != 0)
            throw std::runtime_error("the " + o.name + " backend has one device (0); --device " + std::to_string(o.device) + " does not exist");
        if (o.name == "reference") return make_reference_backend();
        return make_cpu_backend(o.threads);
    }
    if (o.name == "vulkan" || o.name == "cuda")
        throw std::runtime_error("this build of lockstep has no " + o.name + " backend yet; use --backend cpu");
    throw std::runtime_error("unknown backend '" + o.name + "' (choose cpu, vulkan or cuda)");
}

}  // namespace ls
