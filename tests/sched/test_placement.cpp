// Placement plans (issue 31): what -ngl, --split-mode, --tensor-split, -ot, --cpu-moe and
// --n-cpu-moe put where, over names and byte counts only, and what they refuse.
#include <catch2/catch.hpp>

#include <numeric>

#include "core/sched/placement.h"

using namespace ls;

namespace {

// A model of n_layer layers, 10 bytes per tensor; with experts, each layer has three.
PlacementInput fake_model(int n_layer, bool experts, bool tied = true) {
    PlacementInput in;
    in.n_layer = n_layer;
    in.tensors = {{"token_embd.weight", 100}, {"output_norm.weight", 10}};
    if (!tied) in.tensors.emplace_back("output.weight", 100);
    for (int il = 0; il < n_layer; ++il) {
        const std::string p = "blk." + std::to_string(il) + ".";
        for (const char* t : {"attn_q.weight", "attn_norm.weight", "ffn_norm.weight"}) in.tensors.emplace_back(p + t, 10);
        if (experts)
            for (const char* t : {"ffn_gate_exps.weight", "ffn_up_exps.weight", "ffn_down_exps.weight", "ffn_gate_inp.weight"})
                in.tensors.emplace_back(p + t, 10);
    }
    in.layer_state_bytes.assign(size_t(n_layer), 5);
    return in;
}

std::vector<PlacementDevice> devices(int n_gpu, size_t free = 0) {
    std::vector<PlacementDevice> d{{"cpu", 0, true}};
    for (int g = 0; g < n_gpu; ++g) d.push_back({"cuda" + std::to_string(g), free, false});
    return d;
}

PlacementFlags ngl(int n) {
    PlacementFlags f;
    f.n_gpu_layers = n;
    return f;
}

}  // namespace

TEST_CASE("placement: -ngl counts layers from the last, the output head as one", "[placement]") {
    const auto in = fake_model(4, false);
    SECTION("0: everything on the CPU") {
        const auto p = plan_placement(devices(1), ngl(0), in);
        CHECK(p.layer_device == std::vector<int>{0, 0, 0, 0});
        CHECK(p.output_device == 0);
        CHECK(p.used_devices() == std::vector<int>{0});
    }
    SECTION("1: the output head alone, with its own copy of the tied token_embd") {
        const auto p = plan_placement(devices(1), ngl(1), in);
        CHECK(p.layer_device == std::vector<int>{0, 0, 0, 0});
        CHECK(p.output_device == 1);
        CHECK(p.input_device == 0);
        CHECK(p.weight_bytes[1] == 10 + 100);  // output_norm and the copy
        CHECK(p.describe() == "cpu: input, layers 0-3 (220 B weights, 20 B KV/state); cuda0: output (110 B weights)");
    }
    SECTION("3: the last two layers and the output") {
        const auto p = plan_placement(devices(1), ngl(3), in);
        CHECK(p.layer_device == std::vector<int>{0, 0, 1, 1});
        CHECK(p.device_of("blk.2.attn_q.weight") == 1);
        CHECK(p.device_of("blk.1.attn_q.weight") == 0);
        CHECK(p.state_bytes == std::vector<size_t>{10, 10});
    }
    SECTION("all (and any count past the layers): the input too, so one device runs the whole graph") {
        for (int n : {PlacementFlags::kAll, 5, 99}) {
            const auto p = plan_placement(devices(1), ngl(n), in);
            CHECK(p.layer_device == std::vector<int>{1, 1, 1, 1});
            CHECK(p.input_device == 1);
            CHECK(p.output_device == 1);
            CHECK(p.used_devices() == std::vector<int>{1});
        }
    }
    SECTION("no GPU device: everything on the CPU whatever -ngl says") {
        const auto p = plan_placement(devices(0), ngl(3), in);
        CHECK(p.used_devices() == std::vector<int>{0});
    }
}

TEST_CASE("placement: --tensor-split and --split-mode spread the layers over GPU devices", "[placement]") {
    const auto in = fake_model(7, false, false);  // 7 layers + output = 8 offloaded
    PlacementFlags f;
    SECTION("even shares by default (free memory unknown)") {
        const auto p = plan_placement(devices(2), f, in);
        CHECK(p.layer_device == std::vector<int>{1, 1, 1, 1, 2, 2, 2});
        CHECK(p.output_device == 2);
    }
    SECTION("by free memory when every device reports it") {
        auto d = devices(2);
        d[1].memory_free = 3000;
        d[2].memory_free = 1000;
        const auto p = plan_placement(d, f, in);
        CHECK(p.layer_device == std::vector<int>{1, 1, 1, 1, 1, 1, 2});
    }
    SECTION("3,1") {
        f.tensor_split = {3, 1};
        const auto p = plan_placement(devices(2), f, in);
        CHECK(p.layer_device == std::vector<int>{1, 1, 1, 1, 1, 1, 2});
        CHECK(p.output_device == 2);
    }
    SECTION("0,1: the first device gets nothing") {
        f.tensor_split = {0, 1};
        const auto p = plan_placement(devices(2), f, in);
        CHECK(p.used_devices() == std::vector<int>{2});
    }
    SECTION("--split-mode none: the first GPU only") {
        f.split_layers = false;
        const auto p = plan_placement(devices(2), f, in);
        CHECK(p.used_devices() == std::vector<int>{1});
    }
    SECTION("splits that do not add up are refused") {
        f.tensor_split = {1, 1, 1};
        CHECK_THROWS_WITH(plan_placement(devices(2), f, in), Catch::Contains("--tensor-split gives 3 shares for 2 GPU devices"));
        f.tensor_split = {0, 0};
        CHECK_THROWS_WITH(plan_placement(devices(2), f, in), Catch::Contains("add up to 0"));
        f.tensor_split = {1, -1};
        CHECK_THROWS_WITH(plan_placement(devices(2), f, in), Catch::Contains("must be >= 0"));
        f.tensor_split = {1};
        CHECK_THROWS_WITH(plan_placement(devices(0), f, in), Catch::Contains("--tensor-split needs GPU devices"));
    }
}

TEST_CASE("placement: --split-mode row keeps the layers on the first GPU and splits their matrices' rows", "[placement]") {
    auto in = fake_model(3, false, false);  // attn_q: 10 bytes of 5 rows in each layer
    for (int il = 0; il < 3; ++il) in.matrix_rows["blk." + std::to_string(il) + ".attn_q.weight"] = 5;
    PlacementFlags f;
    f.split_rows = true;
    f.tensor_split = {2, 3};
    const auto p = plan_placement(devices(2), f, in);
    CHECK(p.layer_device == std::vector<int>{1, 1, 1});
    CHECK(p.output_device == 1);
    REQUIRE(p.row_slices.size() == 3);
    const auto& sl = p.row_slices.at("blk.1.attn_q.weight");
    REQUIRE(sl.size() == 2);
    CHECK(sl[0].first == 1);
    CHECK((sl[0].second.begin == 0 && sl[0].second.end == 2));
    CHECK(sl[1].first == 2);
    CHECK((sl[1].second.begin == 2 && sl[1].second.end == 5));
    // Bytes by rows: 2 of 5 rows of each 10-byte matrix on cuda0, 3 on cuda1; the rest on cuda0.
    CHECK(p.weight_bytes[2] == 3 * 6);
    CHECK(p.weight_bytes[1] == 100 + 100 + 10 + 3 * (4 + 10 + 10));
    CHECK(p.describe() == "cuda0: input, layers 0-2, output, rows of 3 matrices (282 B weights, 15 B KV/state); "
                          "cuda1: rows of 3 matrices (18 B weights)");
    SECTION("all shares on one device: its matrices whole") {
        f.tensor_split = {0, 1};
        const auto q = plan_placement(devices(2), f, in);
        CHECK(q.row_slices.empty());
        CHECK(q.device_of("blk.0.attn_q.weight") == 2);
    }
    SECTION("-ngl leaves the first layers on the CPU, unsplit") {
        f.n_gpu_layers = 2;  // layer 2 and the output head
        const auto q = plan_placement(devices(2), f, in);
        CHECK(q.layer_device == std::vector<int>{0, 0, 1});
        CHECK(q.row_slices.size() == 1);
        CHECK(q.row_slices.count("blk.2.attn_q.weight") == 1);
    }
    SECTION("one GPU is refused") {
        f.tensor_split.clear();
        CHECK_THROWS_WITH(plan_placement(devices(1), f, in), Catch::Contains("--split-mode row needs two GPU devices"));
    }
}

TEST_CASE("placement: -ot, --cpu-moe and --n-cpu-moe move tensors, and bad ones are refused", "[placement]") {
    const auto in = fake_model(3, true);
    PlacementFlags f;
    SECTION("--cpu-moe: every layer's routed experts on the CPU, the router stays") {
        f.cpu_moe = true;
        const auto p = plan_placement(devices(1), f, in);
        for (int il = 0; il < 3; ++il) {
            const std::string b = "blk." + std::to_string(il) + ".";
            CHECK(p.device_of(b + "ffn_up_exps.weight") == 0);
            CHECK(p.device_of(b + "ffn_down_exps.weight") == 0);
            CHECK(p.device_of(b + "ffn_gate_inp.weight") == 1);
            CHECK(p.device_of(b + "attn_q.weight") == 1);
        }
        CHECK(p.weight_bytes[0] == 90);
    }
    SECTION("--n-cpu-moe 2: layers 0 and 1") {
        f.n_cpu_moe = 2;
        const auto p = plan_placement(devices(1), f, in);
        CHECK(p.device_of("blk.1.ffn_gate_exps.weight") == 0);
        CHECK(p.device_of("blk.2.ffn_gate_exps.weight") == 1);
    }
    SECTION("-ot: the first matching pattern wins, over --cpu-moe too") {
        f.cpu_moe = true;
        f.overrides = {{"blk\\.1\\.ffn_up", "CUDA0"}, {"attn_q", "cpu"}, {"blk\\.1\\.", "cuda1"}};
        const auto p = plan_placement(devices(2), f, in);
        CHECK(p.device_of("blk.1.ffn_up_exps.weight") == 1);
        CHECK(p.device_of("blk.1.attn_q.weight") == 0);
        CHECK(p.device_of("blk.1.ffn_norm.weight") == 2);
        CHECK(p.device_of("blk.0.ffn_up_exps.weight") == 0);
    }
    SECTION("refused") {
        f.overrides = {{"no_such_tensor", "cpu"}};
        CHECK_THROWS_WITH(plan_placement(devices(1), f, in), Catch::Contains("-ot 'no_such_tensor=cpu' matches no tensor of this model"));
        f.overrides = {{"ffn_(up", "cpu"}};
        CHECK_THROWS_WITH(plan_placement(devices(1), f, in), Catch::Contains("is not a regular expression"));
        f.overrides = {{"ffn_up", "cuda7"}};
        CHECK_THROWS_WITH(plan_placement(devices(1), f, in), Catch::Contains("no device 'cuda7' (open: cpu, cuda0)"));
        f.overrides.clear();
        f.cpu_moe = true;
        CHECK_THROWS_WITH(plan_placement(devices(1), f, fake_model(3, false)), Catch::Contains("this model has no expert tensors"));
        CHECK_THROWS_WITH(plan_placement({{"cuda0", 0, false}}, f, in), Catch::Contains("need the CPU device"));
    }
}

TEST_CASE("placement: a plan that does not fit is refused naming the device, and -ngl auto fits", "[placement]") {
    auto in = fake_model(4, false);
    in.compute_bytes = 7;
    // Per layer 30 weight bytes + 5 state; output 110 (norm + tied copy); compute 7.
    SECTION("refused, with the bytes needed and free") {
        CHECK_THROWS_WITH(plan_placement(devices(1, 100), ngl(PlacementFlags::kAll), in),
                          Catch::Contains("does not fit cuda0: it needs 257 B (230 B weights, 20 B KV/state, 7 B compute) and 100 B is free"));
    }
    SECTION("auto: as many layers as fit") {
        const auto p = plan_placement(devices(1, 200), ngl(PlacementFlags::kAuto), in);  // 110 + 2 x 35 + 7 = 187
        CHECK(p.layer_device == std::vector<int>{0, 0, 1, 1});
        CHECK(p.output_device == 1);
        const auto none = plan_placement(devices(1, 50), ngl(PlacementFlags::kAuto), in);
        CHECK(none.used_devices() == std::vector<int>{0});
    }
    SECTION("unknown free memory is not checked") {
        CHECK_NOTHROW(plan_placement(devices(1, 0), ngl(PlacementFlags::kAll), in));
    }
}
