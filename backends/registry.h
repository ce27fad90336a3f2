// Creates a backend by the name users give on the command line.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "core/backend.h"

namespace ls {

struct BackendOptions {
    std::string name = "cpu";  // cpu | vulkan | cuda | reference
    int device = 0;
    int threads = 0;           // CPU threads; <= 0: one per core
};

// Throws std::runtime_error with a clear message for an unknown name, a backend this build
// lacks, or a device index out of range.
std::unique_ptr<Backend> create_backend(const BackendOptions& o);
std::vector<std::string> backend_names();

}  // namespace ls
