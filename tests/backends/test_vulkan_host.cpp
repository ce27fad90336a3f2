// The Vulkan backend's supports rule, checked without a device: every node of the op table and
// of every tiny model's graph is one its shaders run. The kernels themselves run in the
// vulkan_suite CTest entry (lavapipe here), which fails on any node refused there.
#if LOCKSTEP_HAVE_VULKAN
#include <catch2/catch.hpp>

#include "backends/vulkan/vulkan_backend.h"
#include "core/ir/ops.h"
#include "tests/support/graph_nodes.h"

using namespace ls;

TEST_CASE("vulkan: supports() accepts every node of the op table and of every model graph", "[vulkan]") {
    size_t nodes = 0;
    const auto check = [&](const std::string& where, const Tensor& n) {
        INFO(where << ": " << op_name(n.op) << " " << shape_str(n));
        CHECK(vulkan_supports_node(n));
        ++nodes;
    };
    test::for_each_op_case_node(check);
    test::for_each_model_graph_node(check);
    CHECK(nodes > 1000);
    // What it must refuse: a leaf is no op; an activation type as a weight.
    Graph g;
    Tensor* x = g.new_tensor(DType::F32, {256, 4});
    CHECK_FALSE(vulkan_supports_node(*x));
    Tensor* w8k = g.new_tensor(DType::Q8_K, {256, 8});
    CHECK_FALSE(vulkan_supports_node(*ops::mul_mat(g, w8k, x)));
}
#endif
