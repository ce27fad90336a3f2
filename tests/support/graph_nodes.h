// Every node a backend's supports() must accept, built without any device: the op table's
// cases and the forward graphs of every tiny model the tests run. The CUDA and Vulkan host
// tests hold each backend's supports rule against them, so a GPU suite cannot meet a node
// it refuses (a refused node fails the suite, test::runs_all) on a machine that has no GPU.
#pragma once
#include <filesystem>
#include <functional>
#include <random>
#include <string>

#include "core/memory/kv_cache.h"
#include "core/memory/recurrent_memory.h"
#include "core/models/model.h"
#include "core/models/registry.h"
#include "core/ref/ref_backend.h"
#include "tests/ops/op_cases.h"
#include "tests/support/tiny_model.h"

namespace ls::test {

using NodeVisitor = std::function<void(const std::string& where, const Tensor& node)>;

inline void for_each_op_case_node(const NodeVisitor& fn) {
    auto ref = make_reference_backend();
    for (const OpCase& oc : op_cases()) {
        Graph g;
        Keep keep;
        std::mt19937 rng(1);
        oc.build(g, *ref, keep, rng);
        for (const Tensor* n : g.nodes()) fn(oc.name, *n);
    }
}

// Every tests/data/*_tiny.gguf and a tiny Gemma 3, each with an f16 and a q8_0 cache, over one
// mixed ubatch: a 5-token prompt of sequence 0 beside a decode token of sequence 1 (prompt and
// decode kernels, two sequences, recurrent state slots where the model has them).
inline void for_each_model_graph_node(const NodeVisitor& fn) {
    auto ref = make_reference_backend();
    std::vector<std::pair<std::string, std::string>> files;  // (name, path)
    for (const auto& e : std::filesystem::directory_iterator(test_data("")))
        if (e.path().filename().string().ends_with("_tiny.gguf")) files.emplace_back(e.path().stem().string(), e.path().string());
    TinyGemma3Spec g3;
    files.emplace_back("gemma3_tiny", tiny_model_path("graph_nodes_gemma3", g3));
    REQUIRE(files.size() > 8);  // the data folder was found
    for (const auto& [name, path] : files) {
        auto m = load_model(path, *ref);
        for (DType kv_type : {DType::F16, DType::Q8_0}) {
            KvCache kv(*ref, m->kv_layout(), KvCacheConfig{64, 2, 16, kv_type, kv_type});
            std::unique_ptr<RecurrentMemory> rs;
            if (!m->recurrent_layout().empty()) rs = std::make_unique<RecurrentMemory>(*ref, m->recurrent_layout(), 2);
            Ubatch ub;
            for (int i = 0; i < 5; ++i) ub.tokens.push_back(i + 1), ub.pos.push_back(i), ub.seq.push_back(0);
            // An encoder (non-causal: each sequence whole in its ubatch) gives hidden states,
            // not logits: sequence 1 is a one-token input of its own.
            const bool encoder = !m->hparams().causal;
            ub.tokens.push_back(9), ub.pos.push_back(encoder ? 0 : 7), ub.seq.push_back(1);
            ub.out_idx = {4, 5};
            ub.hidden = !m->hparams().has_logits;
            Graph g;
            m->build_graph(g, ub, kv, rs.get());
            const std::string where = name + " (" + dtype_name(kv_type) + " cache)";
            for (const Tensor* n : g.nodes()) fn(where, *n);
        }
    }
}

}  // namespace ls::test
