// A model opened on the devices a front end names: the backend or device list, the placement
// flags and the weight memory, then the file loaded over those devices. What the CLI, the
// server and the C API each start from (in one process; under mpirun the CLI opens its rank's
// stage itself, tools/cli/app.cpp).
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "backends/registry.h"
#include "core/models/model.h"

namespace ls {

struct ModelOpenOptions {
    std::string backend = "cpu";       // cpu | vulkan | cuda | reference
    int device = 0;                    // the backend's device
    int threads = 0;                   // CPU threads; <= 0: one per core
    std::vector<std::string> devices;  // "cuda0", "vulkan1", ...: a model placed over several (empty: backend's device)
    PlacementFlags placement;          // -ngl, --split-mode, --tensor-split, -ot, --cpu-moe
    int mmap = -1;                     // -1: copy when it fits in half the free memory, 0: copy, 1: map in place
    KvCacheConfig state;               // the KV cache the plan must leave room for (n_ctx 0: not counted)
};

struct OpenedModel {
    std::vector<std::unique_ptr<Backend>> devices;  // every device opened (outlives the model)
    std::unique_ptr<Model> model;
    // Whether any device opened is not the host (a GPU).
    bool any_gpu = false;
};

// Throws std::runtime_error for a file that does not exist ("model file not found: PATH"),
// std::invalid_argument for the reference backend with a device list or placement flags, and
// what open_devices and load_model throw (an unknown device, a plan that does not fit, a
// GgufError for a broken file).
OpenedModel open_model(const std::string& path, const ModelOpenOptions& o);

// -1 / 0 / 1 (--mmap's auto, no, yes) as the loader takes it.
Model::WeightMemory weight_memory(int mmap);

}  // namespace ls
