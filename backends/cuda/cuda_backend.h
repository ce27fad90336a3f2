// The CUDA backend: every op of the graph as a CUDA kernel on one stream per backend.
#pragma once
#include <memory>
#include <vector>

#include "core/ir/backend.h"

namespace ls {

// Throws std::runtime_error with a clear message when there is no driver, no device, or
// no device `device`.
std::unique_ptr<Backend> make_cuda_backend(int device);
// Devices the CUDA runtime sees; 0 when there is no driver or no device. Never throws.
int cuda_device_count();
std::vector<DeviceInfo> cuda_list_devices();

}  // namespace ls
