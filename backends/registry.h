// Creates a backend by the name users give on the command line.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "core/ir/backend.h"
#include "core/sched/placement.h"

namespace ls {

struct BackendOptions {
    std::string name = "cpu";  // cpu | vulkan | cuda | reference
    int device = 0;
    int threads = 0;           // CPU threads; <= 0: one per core
    bool cpu_single_sequence_scan = false;  // cpu: delta_scan's single-sequence twin (bench only)
};

// The registry: one row per backend family (backends/families/, one file each; a family this
// build leaves out has a row that says so), every function below a walk over the rows.
struct RefusedDevice;
struct BackendFamily {
    const char* name;                              // what --backend takes
    bool built;                                    // compiled into this build
    bool listed;                                   // its devices appear in list_devices() (not the reference)
    std::vector<DeviceInfo> (*devices)();          // the devices it can run on here; never throws
    std::vector<RefusedDevice> (*refused)();       // devices its driver reports that it cannot use (null: none)
    const char* (*requirements)() noexcept;        // what it needs of a device, in words (null: nothing)
    std::unique_ptr<Backend> (*make)(const BackendOptions&);  // throws naming the reason
};
const std::vector<const BackendFamily*>& backend_families();

// Throws std::runtime_error with a clear message for an unknown name, a backend this build
// lacks, or a device index out of range.
std::unique_ptr<Backend> create_backend(const BackendOptions& o);
std::vector<std::string> backend_names();
// Every device of every backend this build has; a backend whose driver or loader is
// missing contributes none (and never throws).
std::vector<DeviceInfo> list_devices();

// Devices a backend's driver reports that the backend cannot use, and why (what they lack);
// none where the backend is not built or has no driver. Never throws.
struct RefusedDevice {
    std::string backend, name, reason;
};
std::vector<RefusedDevice> refused_devices();
// What a backend needs of a device, in words ("" where it has no device requirements).
std::string backend_requirements(const std::string& name);

// Devices by the names placement flags use (--device cuda0,cuda1, -ot ...=vulkan0): "cpu",
// or a backend's name and its device index ("cuda0", "vulkan1"; case-insensitive, so
// llama.cpp's "CUDA0" works too).
struct NamedDevice {
    std::string backend;  // cpu | cuda | vulkan
    int index = 0;
    std::string name() const { return backend == "cpu" ? backend : backend + std::to_string(index); }
};
// Parses one name; throws naming the devices this machine has when it names none of them.
NamedDevice parse_device_name(const std::string& name);
// The names of every device this machine has, "cpu, vulkan0" (what an error lists).
std::string device_names();
// A device's free memory in bytes (its total where the driver reports no free figure; 0:
// unknown, or the host).
size_t device_memory_free(const NamedDevice& d);
size_t device_memory_free(const NamedDevice& d, const std::vector<DeviceInfo>& devices);  // from a listing at hand

// The devices a command places a model on, each with how plans name it.
struct OpenedDevices {
    std::vector<std::unique_ptr<Backend>> backends;
    std::vector<PlacementDevice> desc;  // parallel to backends
    // As load_model takes them (the CPU may map its share of the file in place).
    std::vector<ModelDevice> model_devices() const {
        std::vector<ModelDevice> v;
        for (size_t i = 0; i < backends.size(); ++i) v.push_back({backends[i].get(), desc[i], desc[i].host});
        return v;
    }
};
// `names` (--device cuda0,cuda1): the CPU first, then each named GPU device (a name given
// twice opens the device twice: two backends, as two devices). No names: `backend`'s device
// `index` alone, or, with `with_cpu` (placement flags given) and a GPU backend, the CPU and it.
// Throws naming an unknown device.
OpenedDevices open_devices(const std::vector<std::string>& names, const std::string& backend, int index, int threads, bool with_cpu);

// Whether this build includes the backend (cpu and reference always do).
bool backend_built(const std::string& name);
// Devices the backend can use on this machine: 0 when it is not built, or its driver or
// loader is missing. Never throws.
int backend_device_count(const std::string& name);

}  // namespace ls
