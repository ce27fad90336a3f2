#include <stdexcept>
#include <thread>

#include "backends/families/families.h"
#include "cpu/cpu_backend.h"

namespace ls {

namespace {
std::vector<DeviceInfo> cpu_devices() {
    DeviceInfo d;
    d.backend = "cpu";
    d.name = "host CPU";
    d.features = std::to_string(std::thread::hardware_concurrency()) + " threads";
    return {d};
}
std::unique_ptr<Backend> make_cpu(const BackendOptions& o) {
    if (o.device != 0) throw std::runtime_error("the cpu backend has one device (0); --device " + std::to_string(o.device) + " does not exist");
    return make_cpu_backend(o.threads, o.cpu_single_sequence_scan);
}
}  // namespace

const BackendFamily kCpuFamily{"cpu", true, true, &cpu_devices, nullptr, nullptr, &make_cpu};

}  // namespace ls
