// lockstep devices: every device of every backend this build has, as --device numbers and names them.
#include <cstdio>

#include "backends/registry.h"
#include "tools/cli/app.h"

namespace ls::cli {

int cmd_devices(const Options&) {
    const std::vector<DeviceInfo> devs = list_devices();
    // "placement": the name --device lists and -ot take (cpu, cuda0, vulkan1).
    std::printf("%-8s %-5s %-40s %12s  %-9s  %s\n", "backend", "index", "name", "memory", "placement", "features");
    auto mib = [](size_t b) { return b ? std::to_string(b >> 20) + " MiB" : std::string("-"); };
    for (const DeviceInfo& d : devs)
        std::printf("%-8s %-5d %-40s %12s  %-9s  %s\n", d.backend.c_str(), d.index, d.name.c_str(), mib(d.memory_total).c_str(),
                    (d.backend == "cpu" ? d.backend : d.backend + std::to_string(d.index)).c_str(), d.features.c_str());
    // Devices a backend refuses are listed too, with what they lack.
    for (const RefusedDevice& d : refused_devices())
        std::printf("%-8s %-5s %-40s %12s  %-9s  refused: lacks %s\n", d.backend.c_str(), "-", d.name.c_str(), "", "-", d.reason.c_str());
    for (const std::string& b : backend_names()) {
        if (b == "reference" || b == "cpu" || !backend_built(b)) continue;
        if (const std::string req = backend_requirements(b); !req.empty()) std::printf("%s needs: %s\n", b.c_str(), req.c_str());
        if (backend_device_count(b) == 0)
            std::printf("%s: built, but no usable device on this machine (--backend %s says why)\n", b.c_str(), b.c_str());
    }
    return 0;
}

}  // namespace ls::cli
