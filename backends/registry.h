// Creates a backend by the name users give on the command line.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "core/ir/backend.h"

namespace ls {

struct BackendOptions {
    std::string name = "cpu";  // cpu | vulkan | cuda | reference
    int device = 0;
    int threads = 0;           // CPU threads; <= 0: one per core
    bool cpu_single_sequence_scan = false;  // cpu: delta_scan's single-sequence twin (bench only)
};

// Throws std::runtime_error with a clear message for an unknown name, a backend this build
// lacks, or a device index out of range.
std::unique_ptr<Backend> create_backend(const BackendOptions& o);
std::vector<std::string> backend_names();
// Every device of every backend this build has; a backend whose driver or loader is
// missing contributes none (and never throws).
std::vector<DeviceInfo> list_devices();

// Devices a backend's driver reports that the backend cannot use, and why (what they lack);
// none where the backend is not built or has no driver. Never throws.
struct RefusedDevice {
    std::string backend, name, reason;
};
std::vector<RefusedDevice> refused_devices();
// What a backend needs of a device, in words ("" where it has no device requirements).
std::string backend_requirements(const std::string& name);

// Whether this build includes the backend (cpu and reference always do).
bool backend_built(const std::string& name);
// Devices the backend can use on this machine: 0 when it is not built, or its driver or
// loader is missing. Never throws.
int backend_device_count(const std::string& name);

}  // namespace ls
