// The row of a backend family this build leaves out: no devices, and a clear error for
// --backend NAME (compiled for vulkan and cuda when their libraries are not built).
#pragma once
#include <stdexcept>
#include <string>

#include "backends/families/families.h"

namespace ls::absent {

template <const char* kName> std::unique_ptr<Backend> make(const BackendOptions&) {
    throw std::runtime_error(std::string("this build of lockstep has no ") + kName + " backend; use --backend cpu");
}
inline std::vector<DeviceInfo> no_devices() { return {}; }

}  // namespace ls::absent
