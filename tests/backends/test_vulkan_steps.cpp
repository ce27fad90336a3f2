// What the Vulkan backend records for a decode step, counted by the backend itself: the fused
// groups (backends/vulkan/fused.h) give the bits of the nodes recorded one by one, in fewer
// dispatches and fewer barriers. On a GPU each is a few microseconds of a decode step whatever
// the shader does, so the counts are pinned here, where lavapipe runs them.
#if LOCKSTEP_HAVE_VULKAN
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "backends/vulkan/vulkan_backend.h"
#include "core/runtime/session.h"
#include "tests/support/logits_util.h"
#include "tests/support/test_util.h"
#include "tests/support/tiny_model.h"

using namespace ls;

// A decode step of the tiny Gemma 3 (Q8_0 weights) records 26 dispatches a layer one by one.
// Fused, at least 8 fewer: the post-attention norm, the residual add, the FFN norm and
// gate/up's quantizer as one (norm_chain.comp), the same after the FFN, and gelu, its product
// with up and down's quantizer as one (glu.comp); the barriers between them go too. (The
// per-head rows, head_rows.comp, fuse where the allocator left the chains' rows apart: in
// some layers of this tiny model a rope's output lies one row over its input.)
namespace {
struct Run {
    std::vector<float> logits;
    VulkanGraphCounts counts;  // of the last decode step
};
// A prompt of n_prompt tokens and 4 greedy decode steps of the tiny model, fused or not.
Run decode(const TinyGemma3Spec& spec, bool fuse, const std::string& name, int n_prompt = 12) {
    if (fuse) unsetenv("LOCKSTEP_VK_FUSE");
    else setenv("LOCKSTEP_VK_FUSE", "0", 1);
    test::LoadedModel l = test::load_tiny("vulkan", name + (fuse ? "_fused" : "_unfused"), spec);
    unsetenv("LOCKSTEP_VK_FUSE");
    SessionParams p;
    p.n_ctx = 128;
    Session s(*l.model, *l.be, p);
    Run r;
    r.logits = s.eval(test::random_tokens(n_prompt, 7, int32_t(spec.n_vocab)));
    const std::vector<float> steps = test::greedy_steps(s, r.logits, spec.n_vocab, 4);
    r.logits.insert(r.logits.end(), steps.begin(), steps.end());
    r.counts = vulkan_last_graph_counts(*l.be);
    return r;
}
// The fused run's logits are the unfused run's, byte for byte.
void check_same_logits(const Run& fused, const Run& unfused) {
    REQUIRE(fused.logits.size() == unfused.logits.size());
    CHECK(std::memcmp(fused.logits.data(), unfused.logits.data(), fused.logits.size() * sizeof(float)) == 0);
}
bool vulkan_under_test() {
    const std::vector<std::string> names = test::backend_names_under_test();
    if (std::find(names.begin(), names.end(), "vulkan") != names.end()) return true;
    WARN("vulkan is not a backend under test here (LOCKSTEP_TEST_BACKENDS): skipped");
    return false;
}
}  // namespace

// A decode step of the tiny Gemma 3 (Q8_0 weights) records 26 dispatches a layer one by one.
// Fused, at least 8 fewer: the post-attention norm, the residual add, the FFN norm and
// gate/up's quantizer as one (norm_chain.comp), the same after the FFN, and gelu, its product
// with up and down's quantizer as one (glu.comp); the barriers between them go too. (The
// per-head rows, head_rows.comp, fuse where the allocator left the chains' rows apart: in
// some layers of this tiny model a rope's output lies one row over its input.)
TEST_CASE("vulkan: fused dispatches give the unfused logits with fewer dispatches and barriers", "[tiny][vulkan_fused]") {
    if (!vulkan_under_test()) return;
    TinyGemma3Spec spec;
    spec.n_layer = 3;
    spec.seed = 29;
    const Run fused = decode(spec, true, "vk"), unfused = decode(spec, false, "vk");
    check_same_logits(fused, unfused);
    INFO("decode step: " << fused.counts.dispatches << " dispatches and " << fused.counts.barriers << " barriers fused, "
                         << unfused.counts.dispatches << " and " << unfused.counts.barriers << " not");
    CHECK(fused.counts.dispatches + 8 * size_t(spec.n_layer) <= unfused.counts.dispatches);
    CHECK(fused.counts.barriers + 8 * size_t(spec.n_layer) <= unfused.counts.barriers);
}

// Gemma 3 1B's widths: there the allocator puts the residual sum of a decode step 1024 floats
// before the projection it adds (a row that died at the norm before), which norm_chain.comp
// takes (each invocation reads an element before it writes 32 elements back); the logits stay
// the unfused ones, and both residual steps of each layer fuse (17 dispatches fewer over 2
// layers, 16 with that chain left apart).
TEST_CASE("vulkan: a fused residual step whose sum lies behind its input gives the unfused logits", "[tiny][vulkan_fused]") {
    if (!vulkan_under_test()) return;
    TinyGemma3Spec spec;
    spec.n_layer = 2;
    spec.n_embd = 1152;
    spec.n_head = 4;
    spec.head_dim = 256;
    spec.n_ff = 6912;
    const Run fused = decode(spec, true, "vk1152"), unfused = decode(spec, false, "vk1152");
    check_same_logits(fused, unfused);
    INFO("decode step: " << fused.counts.dispatches << " dispatches fused, " << unfused.counts.dispatches << " not");
    CHECK(fused.counts.dispatches + 17 <= unfused.counts.dispatches);
}

// Decode past the first key block (positions 70..73): attention runs split, and its fold also
// quantizes the output rows for the output projection (attention_fold.comp), so each layer
// loses the projection's quantizer and a barrier besides the groups above. Six layers, the
// last one global; the windowed ones see 100 keys, over two blocks too.
TEST_CASE("vulkan: the split attention's fold quantizing for the output projection gives the unfused logits", "[tiny][vulkan_fused]") {
    if (!vulkan_under_test()) return;
    TinyGemma3Spec spec;
    spec.n_layer = 6;
    spec.window = 100;
    spec.seed = 31;
    const Run fused = decode(spec, true, "vkdeep", 70), unfused = decode(spec, false, "vkdeep", 70);
    check_same_logits(fused, unfused);
    INFO("decode step: " << fused.counts.dispatches << " dispatches and " << fused.counts.barriers << " barriers fused, "
                         << unfused.counts.dispatches << " and " << unfused.counts.barriers << " not");
    CHECK(fused.counts.dispatches + 9 * size_t(spec.n_layer) <= unfused.counts.dispatches);
    CHECK(fused.counts.barriers + 9 * size_t(spec.n_layer) <= unfused.counts.barriers);
}

#endif
