// The Vulkan backend: every op of the graph as a compute shader (shaders/*.comp).
// The Vulkan loader is opened at run time, so a machine without one gets a clear error
// (and zero devices), never a binary that fails to start.
#pragma once
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/ir/backend.h"

namespace ls {

struct VulkanDeviceDesc {
    std::string name;
    size_t memory_total = 0, memory_free = 0;
    std::string features;
};

// Devices that can run lockstep's shaders (vulkan_requirements()). Empty when there is no
// loader or no such device; never throws.
std::vector<VulkanDeviceDesc> vulkan_devices() noexcept;
// What a device must offer, in words (README "Backends").
const char* vulkan_requirements() noexcept;
// Every device the loader reports that vulkan_devices() leaves out, with what it lacks
// ("name", "bufferDeviceAddress, shaderInt8"). Never throws.
std::vector<std::pair<std::string, std::string>> vulkan_refused_devices() noexcept;
// Whether the Vulkan backend runs this node: what its supports() answers on any device (no
// rule depends on the device), so tests check it where no device exists.
bool vulkan_supports_node(const Tensor& n);
// Throws std::runtime_error with the reason (no loader, no device, index out of range).
std::unique_ptr<Backend> make_vulkan_backend(int device);
// The dispatches and barriers of the last graph a Vulkan backend recorded (its fused groups,
// backends/vulkan/fused.h, against LOCKSTEP_VK_FUSE=0; LOCKSTEP_VK_VERBOSE prints them too).
// Throws std::invalid_argument for a backend of another kind.
struct VulkanGraphCounts {
    size_t dispatches = 0, barriers = 0;
};
VulkanGraphCounts vulkan_last_graph_counts(const Backend& b);

}  // namespace ls
