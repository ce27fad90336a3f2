#include <stdexcept>
#include <thread>

#include "backends/families/families.h"
#include "cpu/cpu_backend.h"

namespace ls {

namespace {
std::vector<DeviceInfo> cpu_devices() {
    return {host_device("cpu", "host CPU", std::to_string(std::thread::hardware_concurrency()) + " threads")};
}
std::unique_ptr<Backend> make_cpu(const BackendOptions& o) {
    check_host_device("cpu", o);
    return make_cpu_backend(o.threads, o.cpu_single_sequence_scan);
}
}  // namespace

DeviceInfo host_device(const char* backend, std::string name, std::string features) {
    DeviceInfo d;
    d.backend = backend;
    d.name = std::move(name);
    d.features = std::move(features);
    return d;
}

void check_host_device(const char* backend, const BackendOptions& o) {
    if (o.device != 0)
        throw std::runtime_error(std::string("the ") + backend + " backend has one device (0); --device " + std::to_string(o.device) +
                                 " does not exist");
}

const BackendFamily kCpuFamily{"cpu", true, true, &cpu_devices, nullptr, nullptr, &make_cpu};

}  // namespace ls
