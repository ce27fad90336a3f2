// The rows of the backend registry (backends/registry.h, BackendFamily), one file per family.
// A family this build leaves out has its "absent" file instead, whose row says so.
#pragma once
#include <string>

#include "backends/registry.h"

namespace ls {

// The one device of a family that computes on the host (cpu, reference), and the check that
// --device names it.
DeviceInfo host_device(const char* backend, std::string name, std::string features = "");
void check_host_device(const char* backend, const BackendOptions& o);

extern const BackendFamily kCpuFamily;
extern const BackendFamily kVulkanFamily;
extern const BackendFamily kCudaFamily;
extern const BackendFamily kReferenceFamily;

}  // namespace ls
