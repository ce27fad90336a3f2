#include "tests/support/test_util.h"

#include <catch2/catch.hpp>
#include <cstdlib>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <unistd.h>
#include <sstream>

#include "backends/registry.h"
#include "core/runtime/default_model.h"

namespace ls::test {

std::string default_model_path() {
    const std::string p = ls::default_model_path();
    INFO("default model missing at " << p << ": run tools/scripts/fetch_model.sh (the README's test command does)");
    REQUIRE(std::filesystem::exists(p));
    return p;
}

std::vector<std::string> backend_names_under_test() {
    // Unset: the CPU alone (each GPU backend's suite is its own CTest entry, which names it).
    // "all": every backend this build has and this machine can run.
    const char* env = std::getenv("LOCKSTEP_TEST_BACKENDS");
    if (!env || !*env) return {"cpu"};
    std::vector<std::string> wanted;
    if (std::string(env) == "all") {
        for (const std::string& n : backend_names())
            if (n != "reference" && backend_built(n) && backend_device_count(n) > 0) wanted.push_back(n);
        return wanted;
    }
    std::stringstream ss(env);
    for (std::string n; std::getline(ss, n, ',');)
        if (!n.empty()) wanted.push_back(n);
    return wanted;
}

std::vector<std::string> all_backend_names() {
    std::vector<std::string> v{"reference"};
    for (const std::string& n : backend_names_under_test())
        if (n != "reference") v.push_back(n);
    return v;
}

std::unique_ptr<Backend> make_backend(const std::string& name) {
    BackendOptions o;
    o.name = name;
    o.threads = 2;
    return create_backend(o);
}

std::vector<std::unique_ptr<Backend>> backends_under_test() {
    std::vector<std::unique_ptr<Backend>> v;
    for (const std::string& n : backend_names_under_test())
        if (n != "reference") v.push_back(make_backend(n));
    return v;
}

bool cpu_emulated_gpu(const std::string& backend) {
    if (backend != "vulkan" && backend != "cuda") return false;
    static const std::vector<DeviceInfo> devices = list_devices();
    for (const DeviceInfo& d : devices)
        if (d.backend == backend && d.index == 0)
            return d.name.find("llvmpipe") != std::string::npos || d.name.find("emulator") != std::string::npos;
    return false;
}

bool runs_all(const Backend& be, const Graph& g) {
    for (const Tensor* n : g.nodes())
        if (!be.supports(*n)) {
            // A failure, not a warning: a backend suite that skipped what its backend refuses
            // would pass green after a kernel was lost or a supports() rule went wrong.
            FAIL_CHECK(be.name() << " has no kernel for " << op_name(n->op) << " " << shape_str(*n)
                                 << ": the case did not run on this backend");
            return false;
        }
    return true;
}

std::string source_dir() { return LOCKSTEP_SOURCE_DIR; }
std::string test_data(const std::string& rel) { return std::string(LOCKSTEP_TEST_DATA) + "/" + rel; }

std::string temp_path(const std::string& name) {
    return (std::filesystem::temp_directory_path() / ("lockstep_" + std::to_string(::getpid()) + "_" + name)).string();
}

long long mapping_rss(const void* start) {
    std::ifstream f("/proc/self/smaps");
    std::string line;
    bool in = false;
    while (std::getline(f, line)) {
        // A mapping's header line: "start-end perms offset dev inode [path]", addresses in hex.
        const size_t dash = line.find('-');
        if (dash != std::string::npos && dash > 0 && line.find(' ') > dash &&
            line.find_first_not_of("0123456789abcdef") == dash) {
            in = std::stoull(line.substr(0, dash), nullptr, 16) == reinterpret_cast<uintptr_t>(start);
            continue;
        }
        if (in && line.rfind("Rss:", 0) == 0) return std::stoll(line.substr(4)) * 1024;  // "Rss:  123 kB"
    }
    return -1;
}

}  // namespace ls::test
