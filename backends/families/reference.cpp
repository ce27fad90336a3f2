#include <stdexcept>

#include "backends/families/families.h"
#include "core/ref/ref_backend.h"

namespace ls {

namespace {
// The spec as a backend: one device, the host, not listed among the devices users pick.
std::vector<DeviceInfo> reference_devices() {
    DeviceInfo d;
    d.backend = "reference";
    d.name = "host CPU (reference ops)";
    return {d};
}
std::unique_ptr<Backend> make_reference(const BackendOptions& o) {
    if (o.device != 0) throw std::runtime_error("the reference backend has one device (0); --device " + std::to_string(o.device) + " does not exist");
    return make_reference_backend();
}
}  // namespace

const BackendFamily kReferenceFamily{"reference", true, false, &reference_devices, nullptr, nullptr, &make_reference};

}  // namespace ls
