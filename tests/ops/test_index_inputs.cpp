// Index data is checked by core once per graph and read on the host from the graph's inputs
// (core/ir/index_inputs.h), never from a device.
#include <catch2/catch.hpp>

#include <stdexcept>
#include <vector>

#include "core/ir/index_inputs.h"
#include "core/ir/ops.h"
#include "core/ref/ref_backend.h"
#include "tests/support/test_util.h"

using namespace ls;

TEST_CASE("check_index_inputs gives the reference's errors for rows, positions and runs", "[ops]") {
    std::vector<float> src(8 * 4, 1.f), x(16 * 3, 0.f);
    {
        Graph g;
        std::vector<int32_t> idx = {0, 3, 4};
        Tensor* s = g.input(DType::F32, {8, 4}, src.data(), "src");
        ops::get_rows(g, s, g.input(DType::I32, {3}, idx.data(), "idx"));
        REQUIRE_THROWS_AS(check_index_inputs(g), std::out_of_range);
        REQUIRE_THROWS_WITH(check_index_inputs(g), "get_rows: index 4 at position 2 outside [0, 4)");
    }
    {
        Graph g;
        std::vector<int32_t> pos = {0, 1, 9}, seq = {0, 0, 0};
        Tensor* q = g.input(DType::F32, {16, 1, 3}, x.data(), "q");
        std::vector<float> cache(16 * 8, 0.f);
        Tensor* k = g.input(DType::F32, {16, 8}, cache.data(), "k");
        Tensor* v = g.input(DType::F32, {16, 8}, cache.data(), "v");
        const AttentionParams p{0, 8, 1, 0.25f, 0.f};
        ops::attention(g, q, k, v, g.input(DType::I32, {3}, pos.data(), "pos"), g.input(DType::I32, {3}, seq.data(), "seq"), p);
        REQUIRE_THROWS_WITH(check_index_inputs(g), "attention: position 9 needs more than the 8 cache rows of its slot (context full)");
    }
    {
        Graph g;
        std::vector<int32_t> runs = {0, 0, 2, 1}, order = {0, 1, 2};  // the run covers 2 of 3 tokens
        std::vector<float> w(4 * 16, 0.f);
        Tensor* state = g.new_tensor(DType::F32, {3 * 16, 1}, "state");  // persistent, never bound: nothing runs
        state->kind = TensorKind::Persistent;
        ops::conv1d_scan(g, g.input(DType::F32, {16, 3}, x.data(), "x"), g.input(DType::F32, {4, 16}, w.data(), "w"), state,
                         g.input(DType::I32, {4, 1}, runs.data(), "runs"),
                         g.input(DType::I32, {3}, order.data(), "order"));
        REQUIRE_THROWS_WITH(check_index_inputs(g), "conv1d_scan: the runs cover 2 of 3 tokens");
    }
}

TEST_CASE("index data is read from graph inputs only", "[ops]") {
    Graph g;
    std::vector<int32_t> idx = {1, 0};
    std::vector<float> src(8 * 2, 1.f);
    Tensor* in = g.input(DType::I32, {2}, idx.data(), "idx");
    CHECK(index_data<int32_t>(g, in, "get_rows")[0] == 1);
    // An input whose bytes come later (a scheduler's crossing) and a computed tensor: no bytes
    // to read on the host, a logic error rather than a device read.
    Tensor* later = g.input_like(*in, "later");
    REQUIRE_THROWS_AS(index_bytes(g, later, "get_rows"), std::logic_error);
    Tensor* s = g.input(DType::F32, {8, 2}, src.data(), "src");
    Tensor* ids = ops::topk_ids(g, s, 2);  // I32 [2, 2], computed
    REQUIRE_THROWS_WITH(index_bytes(g, ids, "get_rows"), Catch::Contains("not a graph input"));
    // A GPU backend refuses a node whose index data it could only read on the device; the host
    // backends read it in place.
    Tensor* rows = ops::get_rows(g, s, ops::reshape(g, ids, {4}));
    for (auto& be : test::backends_under_test()) {
        INFO(be->name());
        const bool host = be->name() == "cpu";
        CHECK(be->supports(*rows) == host);
    }
    CHECK(make_reference_backend()->supports(*rows));
}

TEST_CASE("rope reads a cos/sin table that core makes once per setting", "[ops]") {
    // Gemma 3's sliding and global layers rotate with two bases: a graph holds two tables,
    // however many layers read them (RopeTables in core/models/model.h).
    Graph g;
    std::vector<int32_t> pos = {0, 1, 2};
    const RopeParams local{16, ROPE_NEOX, 10000.f, 1.f}, global{16, ROPE_NEOX, 1000000.f, 0.125f};
    std::vector<float> x(16 * 2 * 3, 0.5f);
    Tensor* q = g.input(DType::F32, {16, 2, 3}, x.data(), "q");
    Tensor* a = ops::rope_table(g, pos.data(), 3, local, nullptr);
    Tensor* b = ops::rope_table(g, pos.data(), 3, global, nullptr);
    ops::rope(g, ops::rope(g, q, a, local), b, global);
    CHECK(a->ne[0] == 16);
    CHECK(a->ne[1] == 3);
    // The table is the rule's cos/sin pairs: position 0 is the identity rotation.
    const float* cs = index_data<float>(g, a, "rope");
    CHECK(cs[0] == 1.f);
    CHECK(cs[1] == 0.f);
    REQUIRE_THROWS_AS(ops::rope(g, q, ops::rope_table(g, pos.data(), 2, local, nullptr), local), std::invalid_argument);
}
