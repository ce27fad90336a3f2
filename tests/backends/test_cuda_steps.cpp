// What the CUDA backend asks of the runtime for each graph, counted by the emulated runtime
// (the LOCKSTEP_CUDA_EMU build, tools/scripts/test.sh's sanitizer run). A decode step must be the
// kept executable graph with only the nodes whose launch changed set again, then launched:
// setting every node (arguments that change each step without need) or instantiating anew
// costs host time each token, a launch that cannot go into a graph falls back to hundreds of
// separate launches, and an allocation or an extra wait stalls the GPU. On a GPU none of that
// is an error, only lost speed, so it is pinned here, where the calls can be counted.
#if defined(LS_CUDA_EMU) && defined(LOCKSTEP_HAVE_CUDA)
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "backends/cuda/emu/cuda_runtime.h"
#include "core/runtime/session.h"
#include "tests/support/logits_util.h"
#include "tests/support/tiny_model.h"

using namespace ls;

namespace {

// An attention node's launches in a decode step: its tile kernel and the fold of its splits.
constexpr int kLaunchesPerAttention = 2;


}  // namespace

TEST_CASE("cuda: prompt ubatches and decode steps run as one graph each, updated in place, without allocating",
          "[cuda_emu]") {
    TinyGemma3Spec spec;
    spec.n_layer = 7;  // six windowed layers (window 8) and a global one
    spec.window = 8;
    spec.seed = 23;
    test::LoadedModel l = test::load_tiny("cuda", "cuda_steps", spec);
    SessionParams p;
    p.n_ctx = 128;
    p.n_ubatch = 16;
    Session s(*l.model, *l.be, p);
    const int64_t nv = spec.n_vocab;
    emu::ApiCounts& c = emu::api_counts();

    // A prompt of four full ubatches: the first instantiates its graph and sizes the
    // buffers, the next two (later positions, more keys, a wrapped ring: data in the graph's
    // inputs) reuse it, setting again at most the attention launches, whose arguments follow
    // the key blocks a query sees (here all in the first block: none; before the launch
    // arguments lost their padding bytes, stack garbage there set them every ubatch); the last
    // adds the output head (the only ubatch with logits), a graph of its own.
    c = {};
    std::vector<float> logits = s.eval(test::random_tokens(64, 5, int32_t(nv)));
    INFO("prompt: " << c.instantiations << " instantiated, " << c.node_updates << " nodes set, " << c.mallocs << " cudaMalloc");
    CHECK(c.graph_launches == 4);
    CHECK(c.instantiations == 2);
    CHECK(c.node_updates <= size_t(kLaunchesPerAttention * spec.n_layer * 2));
    CHECK(c.direct_kernels == 0);

    // Decode steps: the first instantiates the one-token graph, every later one sets again
    // only the nodes whose launch follows the position: each layer's attention (the query's
    // position, and the key count while it grows; 90 nodes in these 12 steps), never the
    // matmuls, norms and elementwise ops that make up most of the graph.
    int32_t tok = test::argmax_last(logits, nv);
    logits = s.eval({tok});
    const int kSteps = 12;  // the windowed layers' rings (24 rows) wrap on the way
    c = {};
    for (int i = 0; i < kSteps; ++i) {
        tok = test::argmax_last(logits, nv);
        logits = s.eval({tok});
    }
    INFO("decode: " << c.instantiations << " instantiated, " << c.node_updates << " nodes set, " << c.direct_kernels
                    << " direct launches, " << c.stream_syncs << " stream syncs, " << c.copies << " copies");
    CHECK(c.graph_launches == kSteps);
    CHECK(c.node_updates <= size_t(kLaunchesPerAttention * spec.n_layer * kSteps));
    CHECK(c.instantiations == 0);
    CHECK(c.direct_kernels == 0);
    CHECK(c.mallocs == 0);
    CHECK(c.frees == 0);
    CHECK(c.host_mallocs == 0);
    CHECK(c.stream_syncs == kSteps);  // the logits' read-back
    CHECK(c.event_syncs == kSteps);   // compute() waits until the previous graph is done with the staging
    CHECK(c.copies % kSteps == 0);    // the same uploads every step

    // A second turn: a one-ubatch prompt with its logits (the first prompt's last ubatch's
    // topology) and decode steps reuse the graphs kept from the first turn.
    c = {};
    logits = s.eval(test::random_tokens(16, 6, int32_t(nv)));
    for (int i = 0; i < 3; ++i) logits = s.eval({test::argmax_last(logits, nv)});
    CHECK(c.graph_launches == 4);
    CHECK(c.instantiations == 0);
}

// The fused launches (CudaBackend::launch_fused) give the bits of the kernels one by one, in
// fewer launches. A decode step's graph of the tiny Gemma 3, 512 wide (the staged norm's
// rows, which the norm + quantizer kernels need), takes 27 launches a layer one by one:
// norm, quantizer, q, k, v; two head norms, two ropes, two cache writes; attention and its
// fold; quantizer, o; norm, add; norm, quantizer, gate, up; gelu, mul; quantizer, down; norm,
// add. Fused, 11: q/k/v as one launch, the six per-head row ops as one (head_rows), attention
// and its fold, quantizer and o, the residual step with the next norm and its quantizer (twice
// a layer), gate/up as one launch, gelu with its mul and down's quantizer, down.
TEST_CASE("cuda: fused launches give the unfused kernels' logits in fewer graph nodes", "[cuda_emu]") {
    TinyGemma3Spec spec;
    spec.n_layer = 3;
    spec.n_embd = 512;
    spec.seed = 29;
    struct Run {
        std::vector<float> logits;
        size_t decode_nodes = 0;
    };
    auto run = [&](bool fuse) {
        if (fuse) unsetenv("LOCKSTEP_CUDA_FUSE");
        else setenv("LOCKSTEP_CUDA_FUSE", "0", 1);
        test::LoadedModel l = test::load_tiny("cuda", fuse ? "cuda_fused" : "cuda_unfused", spec);
        unsetenv("LOCKSTEP_CUDA_FUSE");
        SessionParams p;
        p.n_ctx = 64;
        Session s(*l.model, *l.be, p);
        Run r;
        const std::vector<float> logits = s.eval(test::random_tokens(12, 7, int32_t(spec.n_vocab)));
        emu::ApiCounts& c = emu::api_counts();
        c = {};
        r.logits = test::greedy_steps(s, logits, spec.n_vocab, 4);
        CHECK(c.instantiations == 1);  // the first decode step's graph, set again after
        r.decode_nodes = c.graph_nodes;
        return r;
    };
    const Run fused = run(true), unfused = run(false);
    REQUIRE(fused.logits.size() == unfused.logits.size());
    CHECK(std::memcmp(fused.logits.data(), unfused.logits.data(), fused.logits.size() * sizeof(float)) == 0);
    INFO("decode graph: " << fused.decode_nodes << " nodes fused, " << unfused.decode_nodes << " not");
    CHECK(fused.decode_nodes + 16 * size_t(spec.n_layer) <= unfused.decode_nodes);
}

#endif
