#include "backends/families/families.h"
#include "core/ref/ref_backend.h"

namespace ls {

namespace {
// The spec as a backend: one device, the host, not listed among the devices users pick.
std::vector<DeviceInfo> reference_devices() { return {host_device("reference", "host CPU (reference ops)")}; }
std::unique_ptr<Backend> make_reference(const BackendOptions& o) {
    check_host_device("reference", o);
    return make_reference_backend();
}
}  // namespace

const BackendFamily kReferenceFamily{"reference", true, false, &reference_devices, nullptr, nullptr, &make_reference};

}  // namespace ls
