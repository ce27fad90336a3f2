#include "loader/open_model.h"

#include <filesystem>
#include <stdexcept>

#include "core/models/registry.h"

namespace ls {

Model::WeightMemory weight_memory(int mmap) {
    return mmap < 0 ? Model::WeightMemory::Auto : mmap ? Model::WeightMemory::Map : Model::WeightMemory::Copy;
}

OpenedModel open_model(const std::string& path, const ModelOpenOptions& o) {
    if (!std::filesystem::exists(path)) throw std::runtime_error("model file not found: " + path);
    if (o.backend == "reference" && (o.placement.any() || !o.devices.empty()))
        throw std::invalid_argument("the reference backend runs alone: no device list or placement flags");
    OpenedDevices opened = open_devices(o.devices, o.backend, o.device, o.threads, o.placement.any());
    OpenedModel r;
    for (const PlacementDevice& d : opened.desc) r.any_gpu = r.any_gpu || !d.host;
    const std::vector<ModelDevice> mds = opened.model_devices();
    r.devices = std::move(opened.backends);
    Model::LoadOptions lo;
    lo.mem = weight_memory(o.mmap);
    lo.placement = o.placement;
    lo.state = o.state;
    r.model = load_model(path, mds, lo);
    return r;
}

}  // namespace ls
