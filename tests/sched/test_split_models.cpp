// Models split over several devices give one device's logits, byte for byte (issue 31,
// SEMANTICS.md section 5): -ngl 0, 1, half and all, layers over two devices, --cpu-moe and -ot,
// on the tiny Gemma 3 (rings wrap), Gemma 4, the hybrid qwen35, and the MoE qwen3moe and
// gpt-oss, through mixed-sequence ubatches, decode steps, seq_cp and prefix reuse.
//
// The other devices are the backend under test (LOCKSTEP_TEST_BACKENDS): on the CPU suite a
// second and third CPU backend, which the scheduler treats as devices of their own (every cut
// is a copy through host memory either way); in the Vulkan suite lavapipe opened twice; in the
// emulated CUDA stage two emulated CUDA devices (LOCKSTEP_CUDA_EMU_DEVICES=2).
#include <catch2/catch.hpp>

#include "backends/registry.h"
#include "core/models/registry.h"
#include "tests/support/logits_util.h"
#include "tests/support/tiny_model.h"

using namespace ls;
using namespace ls::test;

namespace {

std::string model_file(const std::string& name) {
    if (name == "swa") return tiny_swa_path();
    return test_data(name + "_tiny.gguf");
}

// The host CPU and two devices of `other` (device 0 and 1 where it has two, else 0 twice).
struct Devices {
    std::vector<std::unique_ptr<Backend>> owned;
    std::vector<ModelDevice> md;
};
Devices open_three(const std::string& other) {
    Devices d;
    d.owned.push_back(make_backend("cpu"));
    d.md.push_back({d.owned.back().get(), {"cpu", 0, true}, true});
    const int n = other == "cpu" ? 1 : backend_device_count(other);
    for (int i = 0; i < 2; ++i) {
        BackendOptions o;
        o.name = other;
        o.device = n >= 2 ? i : 0;
        o.threads = 2;
        d.owned.push_back(create_backend(o));
        d.md.push_back({d.owned.back().get(), {"dev" + std::to_string(i + 1), 0, false}});
    }
    return d;
}

// Two sequences in mixed ubatches of 7 (a context of 96: the SWA rings of 15 rows wrap), then
// decode steps of both, then seq_cp and a continuation, then prefix reuse: every logit.
std::vector<float> workload(const Model& m) {
    SessionParams p;
    p.n_ctx = 96;
    p.n_ubatch = 7;
    p.n_seq = 2;
    Session s(m, p);
    const int32_t nv = int32_t(m.hparams().n_vocab);
    const auto a = random_tokens(40, 1, nv), b = random_tokens(23, 2, nv);
    Batch batch;
    for (size_t i = 0; i < a.size(); ++i) {
        batch.add(a[i], 0, int32_t(i), true);
        if (i < b.size()) batch.add(b[i], 1, int32_t(i), i % 3 == 0);
    }
    std::vector<float> out = s.decode(batch);
    auto append = [&](const std::vector<float>& v) { out.insert(out.end(), v.begin(), v.end()); };
    // Greedy steps of both sequences: each token is the argmax of its sequence's last logits.
    int32_t t0 = a.back(), t1 = b.back();
    for (int step = 0; step < 8; ++step) {
        Batch d;
        d.add(t0, 0, int32_t(s.seq_len(0)), true);
        d.add(t1, 1, int32_t(s.seq_len(1)), true);
        const std::vector<float> l = s.decode(d);
        append(l);
        t0 = int32_t(std::max_element(l.begin(), l.begin() + nv) - l.begin());
        t1 = int32_t(std::max_element(l.begin() + nv, l.end()) - (l.begin() + nv));
    }
    REQUIRE(s.seq_cp(0, 1));
    append(s.eval({5, 6, 7}, 0, 1));
    const auto again = concat(head(a, 30), random_tokens(6, 3, nv));
    const int64_t kept = s.reuse_prefix(0, again);
    append(s.eval({again.begin() + kept, again.end()}, 0, 0));
    return out;
}

struct Placement {
    std::string what;
    PlacementFlags f;
};

std::vector<Placement> placements(const std::string& name, int64_t n_layer, bool moe) {
    std::vector<Placement> v;
    auto ngl = [](int n, bool split = false) {
        PlacementFlags f;
        f.n_gpu_layers = n;
        f.split_layers = split;
        return f;
    };
    v.push_back({"-ngl 0", ngl(0)});
    v.push_back({"-ngl 1 (the output head)", ngl(1)});
    v.push_back({"-ngl half", ngl(int(n_layer / 2))});
    v.push_back({"-ngl all", ngl(PlacementFlags::kAll)});
    v.push_back({"layers over two devices", ngl(PlacementFlags::kAll, true)});
    v.push_back({"-ngl half over two devices, 1,2", ngl(int(n_layer / 2 + 1), true)});
    v.back().f.tensor_split = {1, 2};
    // --split-mode row: each layer's matrices by output rows over both devices, gathered.
    v.push_back({"rows over two devices", ngl(PlacementFlags::kAll, true)});
    v.back().f.split_rows = true;
    v.push_back({"-ngl half, rows over two devices, 1,2", ngl(int(n_layer / 2 + 1), true)});
    v.back().f.split_rows = true;
    v.back().f.tensor_split = {1, 2};
    if (moe) {
        PlacementFlags f = ngl(PlacementFlags::kAll, true);
        f.cpu_moe = true;
        v.push_back({"--cpu-moe", f});
        f.cpu_moe = false;
        f.n_cpu_moe = 1;
        v.push_back({"--n-cpu-moe 1", f});
        f.n_cpu_moe = 0;
        f.overrides = {{"ffn_(up|gate)_exps", "cpu"}, {"blk\\.0\\.ffn_down", "dev2"}};
        v.push_back({"-ot ffn_(up|gate)_exps=cpu, -ot blk.0.ffn_down=dev2", f});
    }
    // A weight away from the node that reads it, on a model otherwise on the CPU alone: the
    // sinks are attention's second weight (the cache decides), so the graph is one piece that
    // still must not read another device's memory.
    if (name == "gptoss") {
        PlacementFlags f = ngl(0);
        f.overrides = {{"attn_sinks", "dev1"}};
        v.push_back({"-ngl 0, -ot attn_sinks=dev1", f});
    }
    // The conv weights on another device than their layer: the scan writes its state in place,
    // so it runs where the state lives, the weights copied to it.
    if (name == "qwen35") {
        PlacementFlags f = ngl(PlacementFlags::kAll);
        f.overrides = {{"ssm_conv1d", "cpu"}};
        v.push_back({"-ot ssm_conv1d=cpu", f});
    }
    return v;
}

}  // namespace

TEST_CASE("placement: every split of a tiny model gives one device's logits, byte for byte", "[placement][tiny]") {
    const std::string name = GENERATE(as<std::string>{}, "swa", "gemma4", "qwen35", "qwen3moe", "gptoss");
    const bool moe = name == "qwen3moe" || name == "gptoss";
    auto cpu = make_backend("cpu");
    const auto want = workload(*load_model(model_file(name), *cpu));
    for (const std::string& other : backend_names_under_test()) {
        if (other == "reference") continue;
        // On a GPU emulated by the CPU (the CUDA emulator under the sanitizers: minutes per
        // model), the splits that cut most: half the layers, layers over both devices, experts
        // on the CPU; real GPUs and lavapipe run them all.
        const bool few = cpu_emulated_gpu(other) && other == "cuda";
        if (few && (name == "gemma4" || name == "gptoss")) continue;
        Devices d = open_three(other);
        const auto n_layer = load_model(model_file(name), *cpu)->hparams().n_layer;
        for (const Placement& pl : placements(name, n_layer, moe)) {
            if (few && pl.what != "-ngl half" && pl.what != "layers over two devices" && pl.what != "--cpu-moe" &&
                pl.what != "rows over two devices")
                continue;
            INFO(name << " on cpu + 2 x " << other << ", " << pl.what);
            Model::LoadOptions o;
            o.placement = pl.f;
            auto m = load_model(model_file(name), d.md, o);
            INFO("plan: " << m->placement().describe());
            CHECK_BIT_IDENTICAL(workload(*m), want, m->hparams().n_vocab);
        }
    }
}

TEST_CASE("placement: the split runs in pieces, and each device holds its share of the weights", "[placement][tiny]") {
    Devices d = open_three("cpu");
    Model::LoadOptions o;
    o.placement.n_gpu_layers = 4;  // of 7 layers: 4..6 and the output head
    o.placement.split_layers = false;
    auto m = load_model(model_file("swa"), d.md, o);
    const PlacementPlan& p = m->placement();
    CHECK(p.layer_device == std::vector<int>{0, 0, 0, 0, 1, 1, 1});
    CHECK(p.output_device == 1);
    size_t total = 0;
    for (const auto& t : m->gguf().tensors()) total += t.nbytes;
    const size_t tok = m->gguf().find_tensor("token_embd.weight")->nbytes;
    CHECK(p.weight_bytes[0] + p.weight_bytes[1] == total + tok);  // the tied output's copy on dev1
    CHECK(m->backends().size() == 2);
    Session s(*m, SessionParams{});
    s.eval(random_tokens(10, 4, int32_t(m->hparams().n_vocab)));
    CHECK(s.last_run().pieces == 2);
    CHECK(s.last_run().bytes_moved > 0);
}

TEST_CASE("placement: --split-mode row runs each split matrix as a slice per device", "[placement][tiny]") {
    Devices d = open_three("cpu");
    Model::LoadOptions o;
    o.placement.split_rows = true;
    o.placement.tensor_split = {1, 3};
    auto m = load_model(model_file("swa"), d.md, o);
    const PlacementPlan& p = m->placement();
    CHECK(p.layer_device == std::vector<int>(7, 1));
    CHECK(p.output_device == 1);
    REQUIRE(!m->row_splits().empty());
    size_t total = 0, split = 0;
    for (const auto& t : m->gguf().tensors()) total += t.nbytes;
    for (const RowSplit& r : m->row_splits()) {
        CHECK(r.whole->buffer == nullptr);  // placed nowhere whole
        REQUIRE(r.parts.size() == 2);
        CHECK(r.parts[0].second.end == r.parts[1].second.begin);
        CHECK(r.parts[1].second.end == r.whole->ne[1]);
        split += r.parts[1].first->nbytes();
    }
    CHECK(p.weight_bytes[0] == 0);
    CHECK(p.weight_bytes[2] == split);  // dev2 holds its rows and nothing else
    CHECK(p.weight_bytes[1] + p.weight_bytes[2] == total);
    Session s(*m, SessionParams{});
    s.eval(random_tokens(10, 4, int32_t(m->hparams().n_vocab)));
    CHECK(s.last_run().pieces > 2 * 7);  // each layer's matrices go to dev2 and back
}

TEST_CASE("placement: the default model split four ways gives one device's logits", "[placement][model]") {
    auto cpu = make_backend("cpu");
    const std::string path = default_model_path();
    const auto want = workload(*load_model(path, *cpu));
    Devices d = open_three("cpu");
    const int64_t n_layer = 18;
    for (int ngl : {0, 1, int(n_layer / 2), PlacementFlags::kAll}) {
        for (bool split : {false, true}) {
            if (split && ngl != PlacementFlags::kAll) continue;
            INFO("-ngl " << ngl << (split ? ", layers over two devices" : ""));
            Model::LoadOptions o;
            o.placement.n_gpu_layers = ngl;
            o.placement.split_layers = split;
            auto m = load_model(path, d.md, o);
            REQUIRE(m->hparams().n_layer == n_layer);
            INFO("plan: " << m->placement().describe());
            CHECK_BIT_IDENTICAL(workload(*m), want, m->hparams().n_vocab);
        }
    }
}
