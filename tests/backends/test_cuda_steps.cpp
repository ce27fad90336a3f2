// What the CUDA backend asks of the runtime for each graph, counted by the emulated runtime
// (the LOCKSTEP_CUDA_EMU build, tools/scripts/test.sh's sanitizer run). A decode step must be one
// captured graph applied to the previous executable graph and launched: an op that reads
// device data on the host, grows a buffer or synchronizes would make every capture fail and
// fall back to hundreds of separate launches, and an allocation or an extra wait would stall
// the GPU each token. On a GPU none of that is an error, only lost speed, so it is pinned
// here, where the calls can be counted.
#if defined(LS_CUDA_EMU) && defined(LOCKSTEP_HAVE_CUDA)
#include <catch2/catch.hpp>

#include <algorithm>

#include "backends/cuda/emu/cuda_runtime.h"
#include "core/runtime/session.h"
#include "tests/support/logits_util.h"
#include "tests/support/tiny_model.h"

using namespace ls;

namespace {

int32_t argmax_last(const std::vector<float>& logits, int64_t n_vocab) {
    const auto last = logits.end() - n_vocab;
    return int32_t(std::max_element(last, logits.end()) - last);
}

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
    // buffers, the next two (later positions, more keys, a wrapped ring) update it; the
    // last adds the output head (the only ubatch with logits), a graph of its own.
    c = {};
    std::vector<float> logits = s.eval(test::random_tokens(64, 5, int32_t(nv)));
    INFO("prompt: " << c.instantiations << " instantiated, " << c.updates << " updated, " << c.mallocs << " cudaMalloc");
    CHECK(c.graph_launches == 4);
    CHECK(c.instantiations == 2);
    CHECK(c.updates == 2);
    CHECK(c.direct_kernels == 0);

    // Decode steps: the first instantiates the one-token graph, every later one updates it.
    int32_t tok = argmax_last(logits, nv);
    logits = s.eval({tok});
    const int kSteps = 12;  // the windowed layers' rings (24 rows) wrap on the way
    c = {};
    for (int i = 0; i < kSteps; ++i) {
        tok = argmax_last(logits, nv);
        logits = s.eval({tok});
    }
    INFO("decode: " << c.instantiations << " instantiated, " << c.updates << " updated, " << c.direct_kernels
                    << " direct launches, " << c.stream_syncs << " stream syncs, " << c.copies << " copies");
    CHECK(c.graph_launches == kSteps);
    CHECK(c.updates == kSteps);
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
    for (int i = 0; i < 3; ++i) logits = s.eval({argmax_last(logits, nv)});
    CHECK(c.graph_launches == 4);
    CHECK(c.instantiations == 0);
    CHECK(c.updates == 4);
}

#endif
