// Tiny Gemma 3 models for tests: written once per test run to the temp directory, removed at exit.
#pragma once

#include <filesystem>
#include <map>
#include <memory>
#include <string>

#include "core/ir/backend.h"
#include "core/models/model.h"
#include "tests/support/tiny_gguf.h"
#include "tests/support/test_util.h"
#include "core/models/registry.h"

namespace ls::test {

// The path of a GGUF written from `spec`; `name` identifies the spec within this run.
inline const std::string& tiny_model_path(const std::string& name, const TinyGemma3Spec& spec) {
    struct Files {
        std::map<std::string, std::string> paths;
        ~Files() {
            std::error_code ec;
            for (auto& [n, p] : paths) std::filesystem::remove(p, ec);
        }
    };
    static Files files;
    auto it = files.paths.find(name);
    if (it == files.paths.end()) {
        const std::string p = temp_path("tiny_" + name + ".gguf");
        write_tiny_gemma3(p, spec);
        it = files.paths.emplace(name, p).first;
    }
    return it->second;
}

// The tiny Gemma 3 with six windowed layers (window 8) and one global, trained context 2048:
// rings of W + B rows wrap within a few tokens (speculation and placement tests share it).
inline const std::string& tiny_swa_path() {
    static const std::string p = [] {
        TinyGemma3Spec s;
        s.n_layer = 7;
        s.window = 8;
        s.ctx = 2048;
        s.seed = 11;
        return tiny_model_path("swa7", s);
    }();
    return p;
}

// A backend and a model loaded on it (the model's weights live in the backend's buffers).
struct LoadedModel {
    std::unique_ptr<Backend> be;
    std::unique_ptr<Model> model;
};

// `backend` as --backend names it (see test::all_backend_names()).
inline LoadedModel load_tiny(const std::string& backend, const std::string& name, const TinyGemma3Spec& spec) {
    LoadedModel l;
    l.be = make_backend(backend);
    l.model = load_model(tiny_model_path(name, spec), *l.be);
    return l;
}

}  // namespace ls::test
