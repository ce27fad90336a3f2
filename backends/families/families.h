// The rows of the backend registry (backends/registry.h, BackendFamily), one file per family.
// A family this build leaves out has its "absent" file instead, whose row says so.
#pragma once
#include "backends/registry.h"

namespace ls {

extern const BackendFamily kCpuFamily;
extern const BackendFamily kVulkanFamily;
extern const BackendFamily kCudaFamily;
extern const BackendFamily kReferenceFamily;

}  // namespace ls
