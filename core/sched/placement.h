// Where each weight of a model lives (issue 31): which device holds each tensor, each layer's
// KV rows and recurrent state, the token embedding and the output head. Pure planning over
// names and byte counts, so every rule is testable without a device; Model::attach applies a
// plan. The flags are llama.cpp's: -ngl, --split-mode, --tensor-split, -ot, --cpu-moe,
// --n-cpu-moe.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/sched/tensor_split.h"

namespace ls {

struct PlacementFlags {
    // -ngl: how many of the last layers go to the GPU devices, the output head counting as one
    // more layer (as llama.cpp counts: -ngl 1 offloads the output head only).
    static constexpr int kAll = -1, kAuto = -2;
    int n_gpu_layers = kAll;
    bool split_layers = true;                                    // --split-mode layer; false: none (the first GPU only)
    // --split-mode row (tensor parallelism): the offloaded layers run on the first GPU device,
    // their matrices' output rows split over the GPU devices by --tensor-split, each device
    // computing whole rows and the slices gathered (README, "Tensor parallelism").
    bool split_rows = false;
    std::vector<double> tensor_split;                            // --tensor-split: shares per GPU device; empty: by free memory
    std::vector<std::pair<std::string, std::string>> overrides;  // -ot REGEX=DEVICE, in order (the first match wins)
    bool cpu_moe = false;                                        // --cpu-moe: every layer's experts in host memory
    int n_cpu_moe = 0;                                           // --n-cpu-moe N: those of layers 0..N-1
    bool any() const {
        return n_gpu_layers != kAll || !split_layers || split_rows || !tensor_split.empty() || !overrides.empty() || cpu_moe ||
               n_cpu_moe > 0;
    }
};

struct PlacementDevice {
    std::string name;        // "cpu", "cuda0", "vulkan1": what --device and -ot name
    size_t memory_free = 0;  // bytes; 0: unknown (not checked)
    bool host = false;       // the CPU: what -ngl's remaining layers, --cpu-moe and "-ot ...=cpu" use
};

class Backend;

// A device the model's weights may be placed on: its backend and how plans name it.
struct ModelDevice {
    Backend* backend = nullptr;
    PlacementDevice desc;
    // Computes on host memory, so it may use its share of the weights in place from the file's
    // mapping (WeightMemory): the CPU, also as one rank's stage under mpirun (where the plan does
    // not treat it as "the CPU" of -ngl).
    bool maps_file = false;
};

struct PlacementInput {
    std::vector<std::pair<std::string, size_t>> tensors;  // every weight the model binds: name, bytes
    int64_t n_layer = 0;
    std::vector<size_t> layer_state_bytes;  // per layer: KV rows and recurrent state (empty: not counted)
    size_t compute_bytes = 0;               // a compute buffer's estimate, counted on each device that runs layers
    size_t logits_bytes = 0;                // a ubatch's logits, counted on the output head's device
    // The layers' matrices --split-mode row may split: name -> output rows (mul_mat's N).
    std::unordered_map<std::string, int64_t> matrix_rows;
};

struct PlacementPlan {
    std::vector<PlacementDevice> devices;
    std::vector<int> layer_device;  // per layer
    int input_device = 0;           // token_embd and the other tensors outside the layers
    int output_device = 0;          // output_norm, output (and a copy of token_embd when tied)
    std::unordered_map<std::string, int> tensor_device;
    // --split-mode row: the matrices split by output rows, each slice's device and rows (the
    // tensor's tensor_device is the device that runs its layer and gathers the slices).
    std::unordered_map<std::string, std::vector<std::pair<int, UnitSlice>>> row_slices;
    std::vector<size_t> weight_bytes, state_bytes;  // per device
    // The plan in a line per device used: "cuda0: layers 12-23, output; 1.20 GiB weights, 96.0 MiB KV".
    std::string describe() const;
    int device_of(const std::string& tensor) const;
    // Devices that hold anything.
    std::vector<int> used_devices() const;
};

// Plans `in` over `devices` as `flags` say. Throws std::invalid_argument naming the problem:
// a split that does not add up, a -ot pattern that is not a regex or matches no tensor, a
// device name not among `devices`, --cpu-moe on a model without experts or without a host
// device, a device the plan does not fit (its name, the bytes needed and free).
PlacementPlan plan_placement(const std::vector<PlacementDevice>& devices, const PlacementFlags& flags, const PlacementInput& in);

// "1.20 GiB", "96.0 MiB", "512 B".
std::string format_bytes(size_t n);

}  // namespace ls
