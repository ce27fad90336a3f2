#include "backends/registry.h"

#include <cctype>
#include <stdexcept>

#include "backends/families/families.h"

namespace ls {

const std::vector<const BackendFamily*>& backend_families() {
    static const std::vector<const BackendFamily*> v{&kCpuFamily, &kVulkanFamily, &kCudaFamily, &kReferenceFamily};
    return v;
}

namespace {
const BackendFamily* family(const std::string& name) {
    for (const BackendFamily* f : backend_families())
        if (name == f->name) return f;
    return nullptr;
}
}  // namespace

std::vector<std::string> backend_names() {
    std::vector<std::string> v;
    for (const BackendFamily* f : backend_families()) v.push_back(f->name);
    return v;
}

bool backend_built(const std::string& name) {
    const BackendFamily* f = family(name);
    return f && f->built;
}

int backend_device_count(const std::string& name) {
    const BackendFamily* f = family(name);
    return f && f->built ? int(f->devices().size()) : 0;
}

std::vector<DeviceInfo> list_devices() {
    std::vector<DeviceInfo> v;
    for (const BackendFamily* f : backend_families())
        if (f->built && f->listed)
            for (DeviceInfo& d : f->devices()) v.push_back(std::move(d));
    return v;
}

std::vector<RefusedDevice> refused_devices() {
    std::vector<RefusedDevice> v;
    for (const BackendFamily* f : backend_families())
        if (f->built && f->refused)
            for (RefusedDevice& d : f->refused()) v.push_back(std::move(d));
    return v;
}

std::string backend_requirements(const std::string& name) {
    const BackendFamily* f = family(name);
    return f && f->requirements ? f->requirements() : "";
}

std::string device_names() {
    std::string s = "cpu";
    for (const DeviceInfo& d : list_devices())
        if (d.backend != "cpu") s += ", " + d.backend + std::to_string(d.index);
    return s;
}

NamedDevice parse_device_name(const std::string& raw) {
    std::string n;
    for (char c : raw) n += char(std::tolower(static_cast<unsigned char>(c)));
    NamedDevice d;
    if (n == "cpu") {
        d.backend = "cpu";
        return d;
    }
    size_t i = 0;
    while (i < n.size() && std::isalpha(static_cast<unsigned char>(n[i]))) ++i;
    d.backend = n.substr(0, i);
    const std::string digits = n.substr(i);
    bool ok = (d.backend == "cuda" || d.backend == "vulkan") && !digits.empty() && digits.size() <= 4 &&
              digits.find_first_not_of("0123456789") == std::string::npos;
    if (ok) d.index = std::stoi(digits);
    if (!ok || !backend_built(d.backend) || d.index >= backend_device_count(d.backend))
        throw std::runtime_error("no device '" + raw + "'" +
                                 (ok && !backend_built(d.backend) ? " (this build of lockstep has no " + d.backend + " backend)" : "") +
                                 "; this machine has: " + device_names() + " (lockstep devices lists them)");
    return d;
}

size_t device_memory_free(const NamedDevice& d, const std::vector<DeviceInfo>& devices) {
    if (d.backend == "cpu") return 0;
    // A driver without a memory budget (lavapipe) reports no free figure: then all of it.
    for (const DeviceInfo& i : devices)
        if (i.backend == d.backend && i.index == d.index) return i.memory_free ? i.memory_free : i.memory_total;
    return 0;
}

size_t device_memory_free(const NamedDevice& d) { return device_memory_free(d, list_devices()); }

OpenedDevices open_devices(const std::vector<std::string>& names, const std::string& backend, int index, int threads, bool with_cpu) {
    OpenedDevices d;
    const std::vector<DeviceInfo> listed = list_devices();  // once: a driver query each time
    auto open = [&](const NamedDevice& n) {
        d.backends.push_back(create_backend({n.backend, n.index, threads}));
        d.desc.push_back({n.name(), device_memory_free(n, listed), n.backend == "cpu"});
    };
    if (names.empty()) {
        if (backend == "reference" || backend == "cpu" || !with_cpu) {
            d.backends.push_back(create_backend({backend, index, threads}));
            d.desc.push_back({backend == "cpu" || backend == "reference" ? backend : backend + std::to_string(index),
                              backend == "cpu" || backend == "reference" ? 0 : device_memory_free({backend, index}, listed),
                              backend == "cpu" || backend == "reference"});
            return d;
        }
        open({"cpu", 0});
        open({backend, index});
        return d;
    }
    std::vector<NamedDevice> gpus;
    for (const std::string& n : names) {
        NamedDevice nd = parse_device_name(n);
        if (nd.backend != "cpu") gpus.push_back(nd);
    }
    open({"cpu", 0});
    for (const NamedDevice& g : gpus) open(g);
    // A device opened twice is one memory: each opening plans with its share of what is free.
    for (size_t i = 1; i < d.desc.size(); ++i) {
        size_t same = 0;
        for (size_t j = 1; j < d.desc.size(); ++j) same += d.desc[j].name == d.desc[i].name;
        d.desc[i].memory_free /= same;
    }
    return d;
}

std::unique_ptr<Backend> create_backend(const BackendOptions& o) {
    if (o.device < 0) throw std::runtime_error("--device must be >= 0, got " + std::to_string(o.device));
    const BackendFamily* f = family(o.name);
    if (!f) throw std::runtime_error("unknown backend '" + o.name + "' (choose cpu, vulkan or cuda)");
    return f->make(o);
}

}  // namespace ls
