#include "backends/families/absent.h"

namespace ls {

namespace {
constexpr char kName[] = "vulkan";
}
const BackendFamily kVulkanFamily{kName, false, true, &absent::no_devices, nullptr, nullptr, &absent::make<kName>};

}  // namespace ls
