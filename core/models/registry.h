// The model registry: which class builds each GGUF `general.architecture`. The only file
// that knows every model family; the Model base knows none of them.
#pragma once
#include <memory>
#include <string>

#include "core/models/model.h"

namespace ls {

// Opens the GGUF at `path`, picks the class of its architecture and loads it onto `be`.
// An architecture not in the registry is refused, naming it and listing those supported.
std::unique_ptr<Model> load_model(const std::string& path, Backend& be,
                                  Model::WeightMemory mem = Model::WeightMemory::Auto);

// The same over several devices, placed as `o` says (Model::attach).
std::unique_ptr<Model> load_model(const std::string& path, const std::vector<ModelDevice>& devices, const Model::LoadOptions& o);

// The architectures the registry knows, comma-separated ("gemma3, gemma4, ...").
std::string supported_architectures();

}  // namespace ls
